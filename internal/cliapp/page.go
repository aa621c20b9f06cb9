package cliapp

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/strata-hpc/strata/api"
)

// list prints a list the broker sends a page at a time (api.Page): it asks
// op for the first page with req, whose Page is page, prints it, and asks
// for the next while the broker names one, so that the first lines appear
// as soon as the first page is in, and no reply has to hold the whole
// list. items takes a reply's items and its next cursor; header and row
// make the table, --json a JSON array of the items (as printJSON writes
// it).
func list[R, T any](c *cli.Context, op string, req any, page *api.Page, items func(*R) ([]T, string), header []string, row func(T) []string) error {
	var out pageWriter[T] = &pagedTable[T]{w: c.App.Writer, header: header, row: row}
	if c.Bool("json") {
		out = &jsonArray[T]{w: c.App.Writer}
	}
	err := pages(c, op, req, page, func(rep *R) (string, error) {
		its, next := items(rep)
		return next, out.page(its)
	})
	if err != nil {
		return err
	}
	return out.close()
}

// pages asks op for page after page (req's Page is page) and hands each
// reply to fn, which returns its next cursor, until the broker names none.
func pages[R any](c *cli.Context, op string, req any, page *api.Page, fn func(*R) (string, error)) error {
	cl, err := dial(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		var rep R
		if err := call(c, cl, op, req, &rep); err != nil {
			return err
		}
		next, err := fn(&rep)
		if err != nil {
			return err
		}
		if next == "" {
			return nil
		}
		if next == page.Cursor {
			return fmt.Errorf("the broker sent the same page twice (cursor %q); the list stops here", next)
		}
		page.Cursor = next
	}
}

// pageWriter writes a list a page at a time.
type pageWriter[T any] interface {
	page(items []T) error
	close() error
}

// pagedTable writes a table a page at a time, as newTable's tab writer
// would write it whole when the list is one page: columns two blanks
// apart, each as wide as its widest cell. A later page cannot widen the
// rows already printed: its columns are as wide as the widest cell so far,
// so a list of many pages stays aligned unless a later cell is wider.
type pagedTable[T any] struct {
	w      io.Writer
	header []string
	row    func(T) []string
	widths []int
	sb     strings.Builder
}

func (t *pagedTable[T]) page(items []T) error {
	rows := make([][]string, 0, len(items)+1)
	if t.widths == nil {
		t.widths = make([]int, len(t.header))
		rows = append(rows, t.header)
	}
	for _, it := range items {
		rows = append(rows, t.row(it))
	}
	// The page's size, so that its text is one allocation: a builder
	// left to grow by doubling allocated four times the text of a
	// 300-job 'strata jobs' (30 KB), and a process pays for fresh memory
	// in page faults.
	for _, r := range rows {
		for i := range len(r) - 1 {
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	size := 0
	for _, r := range rows {
		for i, c := range r {
			size += len(c)
			if i < len(r)-1 {
				size += t.widths[i] - utf8.RuneCountInString(c) + 2
			}
		}
		size++
	}
	t.sb.Reset()
	t.sb.Grow(size)
	for _, r := range rows {
		for i, c := range r {
			t.sb.WriteString(c)
			if i < len(r)-1 {
				pad(&t.sb, t.widths[i]-utf8.RuneCountInString(c)+2)
			}
		}
		t.sb.WriteByte('\n')
	}
	_, err := io.WriteString(t.w, t.sb.String())
	return err
}

// pad writes n blanks to sb.
func pad(sb *strings.Builder, n int) {
	const blanks = "                                                                "
	for ; n > len(blanks); n -= len(blanks) {
		sb.WriteString(blanks)
	}
	sb.WriteString(blanks[:n])
}

func (t *pagedTable[T]) close() error {
	if t.widths == nil { // no page: the header alone
		return t.page(nil)
	}
	return nil
}

// jsonArray writes the items of every page as one indented JSON array,
// byte for byte what printJSON writes of the whole list.
type jsonArray[T any] struct {
	w io.Writer
	n int
}

func (a *jsonArray[T]) page(items []T) error {
	var sb strings.Builder
	for _, it := range items {
		b, err := json.MarshalIndent(it, "  ", "  ")
		if err != nil {
			return err
		}
		if a.n == 0 {
			sb.WriteString("[\n  ")
		} else {
			sb.WriteString(",\n  ")
		}
		sb.Write(b)
		a.n++
	}
	_, err := io.WriteString(a.w, sb.String())
	return err
}

func (a *jsonArray[T]) close() error {
	end := "\n]\n"
	if a.n == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(a.w, end)
	return err
}
