package broker

import (
	"strconv"
	"strings"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// FuzzCursors: the page cursors, as a client may send anything, are read
// without panicking; one that reads back prints as it was read.
func FuzzCursors(f *testing.F) {
	for _, s := range []string{"", "0", "17", "-3", "ten", "18446744073709551616", "1700000000/physics", "/x", "12/", "a17", "l0", "x1", "a"} {
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, cursor string, limit int) {
		p := api.Page{Cursor: cursor, Limit: limit}
		if _, err := idCursor(p); err != nil && !strings.Contains(err.Error(), "page") {
			t.Fatalf("idCursor(%q): %v does not name the page", cursor, err)
		}
		if phase, pos, err := parseAcctCursor(cursor); err == nil && cursor != "" && string(phase)+strconv.FormatUint(pos, 10) != cursor && !strings.HasPrefix(cursor[1:], "+") && !strings.HasPrefix(cursor[1:], "0") {
			t.Fatalf("acct cursor %q reads back as %c%d", cursor, phase, pos)
		} else if err != nil && !strings.Contains(err.Error(), "page cursor") {
			t.Fatalf("parseAcctCursor(%q): %v does not name the page cursor", cursor, err)
		}
		c, ok, err := parseResvCursor(p)
		if err == nil && ok && p.Cursor != c.String() && !strings.HasPrefix(p.Cursor, "+") && !strings.HasPrefix(p.Cursor, "0") && !strings.HasPrefix(p.Cursor, "-0") {
			t.Fatalf("resv cursor %q reads back as %q", p.Cursor, c.String())
		}
	})
}
