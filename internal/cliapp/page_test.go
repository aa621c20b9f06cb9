package cliapp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// TestPagedTableIsTabwriter checks that a table printed as one page is
// byte for byte what the tab writer prints, and that later pages keep the
// columns at least as wide as the first.
func TestPagedTableIsTabwriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		n := rng.IntN(12) + 1
		var sb strings.Builder
		for range n {
			sb.WriteRune([]rune("abcxyzé-日0")[rng.IntN(10)])
		}
		return sb.String()
	}
	for trial := range 200 {
		cols := rng.IntN(6) + 1
		header := make([]string, cols)
		for i := range header {
			header[i] = word()
		}
		rows := make([][]string, rng.IntN(20))
		for i := range rows {
			rows[i] = make([]string, cols)
			for k := range rows[i] {
				rows[i][k] = word()
			}
		}
		var want bytes.Buffer
		tw := newTable(&want)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		tw.Flush()
		var got bytes.Buffer
		pt := &pagedTable[[]string]{w: &got, header: header, row: func(r []string) []string { return r }}
		if err := pt.page(rows); err != nil {
			t.Fatal(err)
		}
		if err := pt.close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("trial %d: paged table\n%s\ntab writer\n%s", trial, got.String(), want.String())
		}

		// Split in pages: every line is as long as in one page or
		// longer, never shorter, and the cells are the same.
		var paged bytes.Buffer
		pt = &pagedTable[[]string]{w: &paged, header: header, row: func(r []string) []string { return r }}
		for i := 0; i < len(rows); i += 3 {
			if err := pt.page(rows[i:min(i+3, len(rows))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := pt.close(); err != nil {
			t.Fatal(err)
		}
		pl, wl := strings.Split(paged.String(), "\n"), strings.Split(want.String(), "\n")
		if len(pl) != len(wl) {
			t.Fatalf("trial %d: %d lines in pages, %d in one", trial, len(pl), len(wl))
		}
		for i := range pl {
			if !slicesEqualFields(pl[i], wl[i]) {
				t.Fatalf("trial %d line %d: %q in pages, %q in one", trial, i, pl[i], wl[i])
			}
		}
	}
}

func slicesEqualFields(a, b string) bool {
	return strings.Join(strings.Fields(a), " ") == strings.Join(strings.Fields(b), " ")
}

// TestJSONArrayIsPrintJSON checks that the pages of a list written as one
// JSON array are byte for byte what printJSON writes of the whole list.
func TestJSONArrayIsPrintJSON(t *testing.T) {
	jobs := []api.Job{{ID: 1, User: "alice", Name: "<a&b>", Command: []string{"x"}}, {ID: 2, User: "bob"}, {ID: 3, User: "carol", Reason: "é\t\n"}}
	for _, split := range [][]int{{}, {3}, {1, 2}, {1, 1, 1}, {0, 3, 0}} {
		want := jobs[:0]
		for _, n := range split {
			want = jobs[:len(want)+n]
		}
		var w bytes.Buffer
		if err := printJSON(&w, nonNil(want)); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		a := &jsonArray[api.Job]{w: &got}
		at := 0
		for _, n := range split {
			if err := a.page(jobs[at : at+n]); err != nil {
				t.Fatal(err)
			}
			at += n
		}
		if err := a.close(); err != nil {
			t.Fatal(err)
		}
		if got.String() != w.String() {
			t.Errorf("pages %v:\n%s\nprintJSON:\n%s", split, got.String(), w.String())
		}
	}
}

func TestPad(t *testing.T) {
	for _, n := range []int{0, 1, 63, 64, 65, 128, 200} {
		var sb strings.Builder
		pad(&sb, n)
		if got := sb.String(); got != strings.Repeat(" ", n) {
			t.Errorf("pad(%d) wrote %d bytes %q", n, len(got), got)
		}
	}
}
