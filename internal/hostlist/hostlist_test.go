package hostlist

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func seq(prefix string, lo, hi int, width int, suffix string) []string {
	var out []string
	for v := lo; v <= hi; v++ {
		out = append(out, fmt.Sprintf("%s%0*d%s", prefix, width, v, suffix))
	}
	return out
}

func cat(parts ...[]string) []string { return slices.Concat(parts...) }

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node7", []string{"node7"}},
		{"login", []string{"login"}},
		{"node[0-15]", seq("node", 0, 15, 1, "")},
		{"node[0-3,8,10-12]", cat(seq("node", 0, 3, 1, ""), []string{"node8"}, seq("node", 10, 12, 1, ""))},
		{"rack1-n[001-128]", seq("rack1-n", 1, 128, 3, "")},
		{"a[1-2],b3", []string{"a1", "a2", "b3"}},
		{"n[1-2]-ib", []string{"n1-ib", "n2-ib"}},
		{"n[1-2].cluster.example", []string{"n1.cluster.example", "n2.cluster.example"}},
		{"rack[1-2]-n[1-2]", []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{"[1-3]", []string{"1", "2", "3"}},
		{"n[7]", []string{"n7"}},
		{"n[007]", []string{"n007"}},
		{"n[3,1,2]", []string{"n3", "n1", "n2"}}, // order as written
		{"b,a", []string{"b", "a"}},
		// Padding: the first number's width, exactly.
		{"n[8-10]", []string{"n8", "n9", "n10"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[001-010]", seq("n", 1, 10, 3, "")},
		{"n[098-101]", []string{"n098", "n099", "n100", "n101"}},
		{"n[001-5]", seq("n", 1, 5, 3, "")},
		{"n[0-2]", []string{"n0", "n1", "n2"}},
		{"n[00-02]", []string{"n00", "n01", "n02"}},
		{"n[1,01,001]", []string{"n1", "n01", "n001"}}, // three different hosts
		{"n01,n1", []string{"n01", "n1"}},
		// Blanks around elements and items.
		{" a , b ", []string{"a", "b"}},
		{"n[1, 3 ,5-6]", []string{"n1", "n3", "n5", "n6"}},
		{"\tn[ 1-2 ]", []string{"n1", "n2"}},
		// Long numbers, up to 18 digits, and long plain digit runs.
		{"n[999999999999999998-999999999999999999]", []string{"n999999999999999998", "n999999999999999999"}},
		{"n12345678901234567890123", []string{"n12345678901234567890123"}},
		{"a_b.c-d", []string{"a_b.c-d"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Parse(%q) = %q, want %q", tt.in, got, tt.want)
			}
			n, err := Count(tt.in)
			if err != nil || n != len(tt.want) {
				t.Fatalf("Count(%q) = %d, %v; want %d", tt.in, n, err, len(tt.want))
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in     string
		kind   error
		pos    int
		part   string
		reason string // substring of Reason
	}{
		{"", ErrSyntax, 0, "", "empty hostlist"},
		{" \t", ErrSyntax, 0, " \t", "empty hostlist"},
		{"a,,b", ErrSyntax, 2, "", "empty name at byte 2, between two commas"},
		{"a,", ErrSyntax, 2, "", "after the last comma"},
		{",a", ErrSyntax, 0, "", "before the first comma"},
		{"a, ,b", ErrSyntax, 3, "", "between two commas"},
		{"node[3-1]", ErrSyntax, 5, "3-1", "range 3-1 is descending; write node[1-3]"},
		{"a,n[010-001]-ib,b", ErrSyntax, 4, "010-001", "range 010-001 is descending; write n[001-010]-ib"},
		{"node[1-3", ErrSyntax, 4, "[1-3", `"[" at byte 4 is never closed`},
		{"node[1-3,b", ErrSyntax, 4, "[1-3,b", "never closed"},
		{"node1-3]", ErrSyntax, 7, "]", `"]" at byte 7 has no matching "["`},
		{"n[1-2]]", ErrSyntax, 6, "]", "no matching"},
		{"n[1[2]]", ErrSyntax, 3, "[", "brackets cannot nest"},
		{"n[]", ErrSyntax, 1, "[]", "empty brackets"},
		{"n[ ]", ErrSyntax, 1, "[ ]", "empty brackets"},
		{"n[1,]", ErrSyntax, 4, "", "empty item"},
		{"n[,1]", ErrSyntax, 2, "", "empty item"},
		{"node[a-b]", ErrSyntax, 5, "a-b", `"a-b" is not a number or a range`},
		{"node[1-]", ErrSyntax, 5, "1-", "not a number"},
		{"node[-1]", ErrSyntax, 5, "-1", "not a number"},
		{"node[1-2-3]", ErrSyntax, 5, "1-2-3", "not a number"},
		{"node[+1]", ErrSyntax, 5, "+1", "not a number"},
		{"node[1 -2]", ErrSyntax, 5, "1 -2", "not a number"},
		{"node[1-010]", ErrSyntax, 5, "1-010", "range 1-010 mixes widths of zero padding; write 001-010 or 1-10"},
		{"node[001-01]", ErrSyntax, 5, "001-01", "mixes widths"},
		{"n[1234567890123456789]", ErrSyntax, 2, "1234567890123456789", "at most 18 digits"},
		{"a b", ErrSyntax, 1, " ", "blank at byte 1 inside a name"},
		{"n [1-2]", ErrSyntax, 1, " ", "inside a name"},
		{"a;b", ErrSyntax, 1, ";", "character ';' at byte 1 cannot be in a host name"},
		{"nœud1", ErrSyntax, 1, "œ", "character 'œ' at byte 1"},
		{"n\xff", ErrSyntax, 1, "\xff", "byte 0xff at byte 1"},
		{"n[1-3],n2", ErrDuplicate, 7, "n2", "name n2 is listed more than once"},
		{"a,b,a", ErrDuplicate, 4, "a", "name a is listed more than once"},
		{"n[1-3,2]", ErrDuplicate, 0, "n[1-3,2]", "name n2 is listed"},
		{"n[1,11][1,11]", ErrDuplicate, 0, "n[1,11][1,11]", "name n111 is listed"},
		{"n1[0-9],n[10-19]", ErrDuplicate, 8, "n[10-19]", "name n10 is listed"},
		{"node[0-999999999]", ErrTooLarge, 0, "node[0-999999999]", "expands to 1000000000 names, more than the limit of 1048576"},
		{"n[0-999999999999999999][0-999999999999999999]", ErrTooLarge, 0, "*", "too many names"},
		{"n[0-1048576]", ErrTooLarge, 0, "n[0-1048576]", "1048577 names"},
		{"a[0-600000],b[0-600000]", ErrTooLarge, 12, "b[0-600000]", "the list expands to more than 1048576 names"},
		{strings.Repeat("x", 256), ErrSyntax, 0, strings.Repeat("x", 256), "names of 256 bytes"},
		{strings.Repeat("x", 250) + "[1-100000]", ErrSyntax, 0, "*", "names of 256 bytes"},
		{strings.Repeat("x", 200) + "[000000-999999]", ErrTooLarge, 0, "*", "bytes of names"},
	}
	for _, tt := range tests {
		name := tt.in
		if len(name) > 40 {
			name = name[:40]
		}
		t.Run(name, func(t *testing.T) {
			for _, f := range []struct {
				name string
				call func(string) error
			}{
				{"Parse", func(s string) error { n, err := Parse(s); checkNil(t, n); return err }},
				{"Count", func(s string) error { _, err := Count(s); return err }},
			} {
				err := f.call(tt.in)
				if f.name == "Count" && tt.kind == ErrDuplicate {
					if err != nil {
						t.Errorf("Count(%q): %v; Count does not look for duplicates", tt.in, err)
					}
					continue
				}
				var e *Error
				if !errors.As(err, &e) {
					t.Fatalf("%s(%q) = %v, want an *Error", f.name, tt.in, err)
				}
				if !errors.Is(err, tt.kind) {
					t.Errorf("%s(%q): %v does not match %v", f.name, tt.in, err, tt.kind)
				}
				if e.Input != tt.in || e.Pos != tt.pos || tt.part != "*" && e.Part != tt.part {
					t.Errorf("%s(%q): Input %q Pos %d Part %q; want Pos %d Part %q", f.name, tt.in, e.Input, e.Pos, e.Part, tt.pos, tt.part)
				}
				if e.Part != "" && e.Input[e.Pos:e.Pos+len(e.Part)] != e.Part {
					t.Errorf("%s(%q): Part %q is not at Pos %d", f.name, tt.in, e.Part, e.Pos)
				}
				if !strings.Contains(e.Reason, tt.reason) {
					t.Errorf("%s(%q): Reason %q, want it to contain %q", f.name, tt.in, e.Reason, tt.reason)
				}
				if !strings.HasPrefix(err.Error(), "hostlist: ") || !strings.Contains(err.Error(), e.Reason) {
					t.Errorf("%s(%q): message %q", f.name, tt.in, err)
				}
			}
		})
	}
}

func checkNil(t *testing.T, names []string) {
	t.Helper()
	if names != nil {
		t.Errorf("names %q returned with an error", names)
	}
}

func TestErrorMessage(t *testing.T) {
	_, err := Parse("node[3-1]")
	if got, want := err.Error(), `hostlist: "node[3-1]": range 3-1 is descending; write node[1-3]`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	long := strings.Repeat("a1,", 40) + "x[2-1]," + strings.Repeat("b1,", 40) + "c"
	_, err = Parse(long)
	msg := err.Error()
	if !strings.Contains(msg, `(at byte 122): range 2-1 is descending; write x[1-2]`) ||
		!strings.HasPrefix(msg, `hostlist: "...`) || !strings.Contains(msg, `a1,x[2-1],b1,`) || len(msg) > 200 {
		t.Errorf("long input: %s", msg)
	}
}

func TestLimitsFailFast(t *testing.T) {
	for _, in := range []string{
		"node[0-999999999]",
		"node[0-999999999999999999]",
		"n[0-999999],m[0-999999]",
		"n[0-999999999999999999][0-999999999999999999][0-999999999999999999]",
		strings.Repeat("x", 240) + "[000000-999999]",
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		_, err := Parse(in)
		elapsed := time.Since(start)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%.30q...) = %v, want a limit error", in, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
			t.Errorf("Parse(%.30q...) allocated %d bytes before failing", in, alloc)
		}
		if elapsed > 100*time.Millisecond {
			t.Errorf("Parse(%.30q...) took %v to fail", in, elapsed)
		}
	}
}

func TestLimitsExact(t *testing.T) {
	names, err := Parse(fmt.Sprintf("n[0-%d]", MaxNames-1))
	if err != nil || len(names) != MaxNames || names[MaxNames-1] != fmt.Sprint("n", MaxNames-1) {
		t.Fatalf("MaxNames names: %d, %v", len(names), err)
	}
	if _, err := Parse(fmt.Sprintf("n[0-%d],x", MaxNames-1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxNames+1 names: %v", err)
	}
	long := strings.Repeat("x", MaxNameLen-3)
	if names, err := Parse(long + "[998-999]"); err != nil || len(names[0]) != MaxNameLen {
		t.Errorf("MaxNameLen: %v", err)
	}
	if _, err := Parse(long + "[998-1000]"); !errors.Is(err, ErrSyntax) {
		t.Errorf("MaxNameLen+1: %v", err)
	}
	// 64 bytes per name: exactly MaxBytes, then one byte more.
	p := strings.Repeat("p", 64-7)
	if names, err := Parse(p + "[0000000-1048575]"); err != nil || len(names) != MaxNames {
		t.Errorf("MaxBytes: %v", err)
	}
	if n, err := Count(p + "[0000000-1048574]," + strings.Repeat("y", 64)); err != nil || n != MaxNames {
		t.Errorf("MaxBytes: %v", err)
	}
	if _, err := Count(p + "[0000000-1048574]," + strings.Repeat("y", 65)); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("MaxBytes+1: %v", err)
	}
}

func TestItemBytes(t *testing.T) {
	for _, it := range []item{
		{0, 0, 1}, {0, 9, 1}, {0, 10, 1}, {8, 123, 1}, {1, 1000, 3}, {5, 100000, 2}, {99, 101, 5},
		{999999999999999990, 999999999999999999, 1}, {0, 12345, 18},
	} {
		want := 0
		for v := it.lo; v <= it.hi; v++ {
			want += len(pad(v, it.width))
		}
		if got := it.bytes(); got != want {
			t.Errorf("%+v.bytes() = %d, want %d", it, got, want)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{""}, ""},
		{[]string{"login"}, "login"},
		{[]string{"n7"}, "n7"},
		{seq("node", 0, 15, 1, ""), "node[0-15]"},
		{cat(seq("node", 10, 12, 1, ""), []string{"node8"}, seq("node", 0, 3, 1, "")), "node[0-3,8,10-12]"},
		{seq("rack1-n", 1, 128, 3, ""), "rack1-n[001-128]"},
		{[]string{"b3", "a2", "a1"}, "a[1-2],b3"},
		{[]string{"n2-ib", "n1-ib"}, "n[1-2]-ib"},
		{[]string{"n1", "n2", "n1", "n2"}, "n[1-2]"}, // repeats ignored
		{[]string{"n1", "n2"}, "n[1-2]"},
		{[]string{"n1", "n3"}, "n[1,3]"},
		// Padding.
		{seq("n", 1, 10, 3, ""), "n[001-010]"},
		{seq("n", 8, 10, 1, ""), "n[8-10]"},
		{seq("n", 8, 10, 2, ""), "n[08-10]"},
		{seq("n", 98, 101, 3, ""), "n[098-101]"},
		{[]string{"n01", "n1"}, "n1,n01"},
		{[]string{"n01", "n02", "n1", "n2"}, "n[1-2],n[01-02]"},
		{[]string{"n1", "n01", "n001"}, "n1,n01,n001"},
		{cat(seq("n", 1, 3, 2, ""), seq("n", 10, 11, 2, "")), "n[01-03,10-11]"},
		{cat(seq("node", 1, 4, 3, ""), seq("node", 100, 120, 3, "")), "node[001-004,100-120]"},
		{cat(seq("n", 1, 5, 3, ""), seq("n", 1, 200, 1, "")), "n[1-200],n[001-005]"},
		{[]string{"n0", "n00", "n000"}, "n0,n00,n000"},
		{[]string{"n009", "n10"}, "n10,n009"}, // not n[009-010]: that is n010
		{[]string{"n09", "n10"}, "n[09-10]"},
		{[]string{"n9", "n10"}, "n[9-10]"},
		// Several affixes, sorted by prefix then suffix.
		{[]string{"rack2-n1", "rack1-n2", "rack1-n1", "rack2-n2"}, "rack1-n[1-2],rack2-n[1-2]"},
		{[]string{"n1-ib0", "n2-ib0"}, "n[1-2]-ib0"},
		{[]string{"a1b5", "a2b5", "a3b5"}, "a[1-3]b5"},
		{[]string{"a1b1", "a1b2", "a2b1"}, "a1b[1-2],a2b1"},
		{[]string{"x1y1", "x2y1", "x3y7"}, "x[1-2]y1,x3y7"},
		{[]string{"n1-ib", "n1", "n2-ib", "n2"}, "n[1-2],n[1-2]-ib"},
		{[]string{"gpu1", "cpu1", "cpu2", "login", "gpu2"}, "cpu[1-2],gpu[1-2],login"},
		{[]string{"n", "n1", "n2"}, "n,n[1-2]"},
		{[]string{"n12345678901234567890123", "n1"}, "n1,n12345678901234567890123"},
		{[]string{"7", "8", "9"}, "[7-9]"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			in := slices.Clone(tt.names)
			got := Format(tt.names)
			if got != tt.want {
				t.Fatalf("Format(%q) = %q, want %q", tt.names, got, tt.want)
			}
			if !slices.Equal(in, tt.names) {
				t.Fatalf("Format changed its argument")
			}
			if got == "" {
				return
			}
			checkRoundTrip(t, tt.names)
		})
	}
}

// checkRoundTrip checks that Format(names) parses back to names as a set,
// and that formatting that again changes nothing.
func checkRoundTrip(t *testing.T, names []string) {
	t.Helper()
	f := Format(names)
	back, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(Format(%q)) = %v (Format gave %q)", names, err, f)
	}
	want := slices.Clone(names)
	want = slices.DeleteFunc(want, func(s string) bool { return s == "" })
	slices.Sort(want)
	want = slices.Compact(want)
	got := slices.Sorted(slices.Values(back))
	if !slices.Equal(got, want) {
		t.Fatalf("Parse(Format(x)) is not x as a set:\n  x      %q\n  format %q\n  parsed %q", want, f, got)
	}
	if f2 := Format(back); f2 != f {
		t.Fatalf("Format(Parse(Format(x))) = %q, want %q", f2, f)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, in := range []string{
		"node[0-15]", "node[0-3,8,10-12]", "rack1-n[001-128]", "a[1-2],b3", "n[1-2]-ib",
		"rack[1-2]-n[001-004]", "n[1,01,001,0001]", "n[0-9,00-99,000-999]", "x[1,11][1,11,111]9",
		"c[0-1]-0c[0-2]s[0-7]n[0-3]", "n[999999999999999990-999999999999999999]",
		"a1b[1-3],a[2-4]b1", "login,n[1-4],n[01-03]-ib,gpu[7-9].x",
	} {
		t.Run(in, func(t *testing.T) {
			names, err := Parse(in)
			if errors.Is(err, ErrDuplicate) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, names)
		})
	}
}

func TestParseFormatCanonical(t *testing.T) {
	// Parse(Format(x)) is the canonical order: formatting is stable, and
	// parsing the canonical form gives names sorted group by group.
	names, _ := Parse("n[3,1,2],b,a,n[09-10]")
	f := Format(names)
	if f != "a,b,n[1-3],n[09-10]" {
		t.Fatalf("Format = %q", f)
	}
	back, _ := Parse(f)
	if want := []string{"a", "b", "n1", "n2", "n3", "n09", "n10"}; !slices.Equal(back, want) {
		t.Fatalf("Parse(Format) = %q, want %q", back, want)
	}
}
