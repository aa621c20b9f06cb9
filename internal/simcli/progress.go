package simcli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// isTerminal reports whether f is a character device (a terminal), so that
// progress bars are drawn only for people, never into pipes or files.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// progress draws a one-line bar, redrawn in place with a carriage return.
type progress struct {
	w     io.Writer
	label string
	last  int
}

func newProgress(w io.Writer, label string) *progress { return &progress{w: w, label: label, last: -1} }

func (p *progress) update(done, total int) {
	if total <= 0 {
		return
	}
	pct := done * 100 / total
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 40
	fill := pct * width / 100
	fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %d/%d jobs", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), pct, done, total)
}

func (p *progress) done() {}
