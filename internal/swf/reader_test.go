package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readAll reads every job of an in-memory trace, stopping at the first
// error.
func readAll(t *testing.T, data []byte, name string) (Header, []Job, error) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(data), name)
	if err != nil {
		return Header{}, nil, err
	}
	defer r.Close()
	var jobs []Job
	for {
		j, err := r.Next()
		if err == io.EOF {
			return r.Header(), jobs, nil
		}
		if err != nil {
			return r.Header(), jobs, err
		}
		jobs = append(jobs, j)
	}
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

const ctcLike = `; Version: 2.2
; Computer: IBM SP2
; Information: http://www.tc.cornell.edu/
;              http://www.cs.huji.ac.il/labs/parallel/workload/
; MaxJobs: 79302
; UnixStartTime: 835823160
; TimeZoneString: US/Eastern
; StartTime: Wed Jun 26 17:06:00 EDT 1996
; EndTime:   Sat May 31 23:11:26 EDT 1997
; MaxNodes: 338 (batch partition; 512 total)
; MaxProcs: 338
; Queue:  1 DSI      
; Queue:  2 astro    
;
; Note: THIS IS A CLEANED VERSION OF THE LOG!
;       The filter used to produce it was
;         user=135 and (job>=47421 and job<=50307) (2080 jobs removed)
;
    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1
    2   164472 356587     75   17   2.00    -1   -1    300    -1  1  81  -1 195  3 -1 -1 -1
`

func TestHeader(t *testing.T) {
	h, jobs, err := readAll(t, []byte(ctcLike), "ctc.swf")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("got %d jobs, want 2", len(jobs))
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Version", h.Version, "2.2"},
		{"Computer", h.Computer, "IBM SP2"},
		{"Information", h.Information, "http://www.tc.cornell.edu/\nhttp://www.cs.huji.ac.il/labs/parallel/workload/"},
		{"MaxJobs", h.MaxJobs, 79302},
		{"MaxRecords", h.MaxRecords, 0},
		{"UnixStartTime", h.UnixStartTime, int64(835823160)},
		{"TimeZoneString", h.TimeZoneString, "US/Eastern"},
		{"StartTime", h.StartTime, "Wed Jun 26 17:06:00 EDT 1996"},
		{"EndTime", h.EndTime, "Sat May 31 23:11:26 EDT 1997"},
		{"MaxNodes", h.MaxNodes, 338},
		{"MaxProcs", h.MaxProcs, 338},
		{"Fields[MaxNodes]", h.Fields["MaxNodes"], []string{"338 (batch partition; 512 total)"}},
		{"Fields[Queue]", h.Fields["Queue"], []string{"1 DSI", "2 astro"}},
		{"Fields[Note]", h.Fields["Note"], []string{"THIS IS A CLEANED VERSION OF THE LOG!\nThe filter used to produce it was\nuser=135 and (job>=47421 and job<=50307) (2080 jobs removed)"}},
		{"len(Raw)", len(h.Raw), 18},
		{"Raw[11]", h.Raw[11], "; Queue:  1 DSI      "},
		{"Raw[17]", h.Raw[17], ";"},
		{"MachineUnits", MachineUnits(h), 338},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if _, ok := h.Fields["http"]; ok {
		t.Errorf("a URL continuation line was taken for a field: %q", h.Fields)
	}
	want := Job{JobID: 1, Submit: 0, Wait: 588530, Run: 937, AllocProcs: 306, AvgCPU: 142,
		UsedMem: -1, ReqProcs: -1, ReqTime: 35100, ReqMem: -1, Status: 1, User: 97, Group: -1,
		Executable: 307, Queue: 3, Partition: -1, PrecedingJob: -1, ThinkTime: -1}
	if jobs[0] != want {
		t.Errorf("job 1 = %+v\nwant    %+v", jobs[0], want)
	}
}

func TestHeaderEdges(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(h Header) bool
	}{
		{"empty input", "", func(h Header) bool { return h.Raw == nil && h.Fields == nil }},
		{"header only", "; MaxProcs: 4\n", func(h Header) bool { return h.MaxProcs == 4 }},
		{"no header", "1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1\n", func(h Header) bool { return len(h.Raw) == 0 }},
		{"first of repeated numeric key wins", "; MaxProcs: 4\n; MaxProcs: 8\n", func(h Header) bool {
			return h.MaxProcs == 4 && reflect.DeepEqual(h.Fields["MaxProcs"], []string{"4", "8"})
		}},
		{"first of repeated string key wins", "; Computer: a\n; Computer: b\n", func(h Header) bool { return h.Computer == "a" }},
		{"negative and signed numbers", "; TimeZone: -18000\n; MaxNodes: +7\n", func(h Header) bool {
			return h.TimeZone == -18000 && h.MaxNodes == 7
		}},
		{"nodes only", "; MaxNodes: 12\n", func(h Header) bool { return MachineUnits(h) == 12 }},
		{"neither", "; Computer: x\n", func(h Header) bool { return MachineUnits(h) == 0 }},
		{"free text is raw only", "; hello there\n;Version: 2\n", func(h Header) bool {
			return len(h.Fields) == 1 && h.Version == "2" && len(h.Raw) == 2
		}},
		{"indented line without a key to continue", ";    MaxProcs: 9\n", func(h Header) bool { return h.MaxProcs == 9 }},
		{"blank lines inside header skipped", "; A: 1\n\n   \n; B: 2\n", func(h Header) bool {
			return len(h.Raw) == 2 && h.Fields["B"][0] == "2"
		}},
		{"CRLF", "; Version: 2.2\r\n; MaxProcs: 64\r\n", func(h Header) bool {
			return h.Version == "2.2" && h.MaxProcs == 64 && h.Raw[0] == "; Version: 2.2"
		}},
		{"empty value", "; Note:\n", func(h Header) bool { return h.Fields["Note"][0] == "" }},
		{"late comments stay out of Raw", "; A: 1\n1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1\n; B: 2\n", func(h Header) bool {
			return len(h.Raw) == 1 && h.Fields["B"] == nil
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, _, err := readAll(t, []byte(tc.in), "x.swf")
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(h) {
				t.Errorf("unexpected header %+v", h)
			}
		})
	}
}

func TestJobQuirks(t *testing.T) {
	tests := []struct {
		name string
		line string
		want Job
	}{
		{"all unknown", "-1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1 -1",
			Job{-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}},
		{"decimals truncate toward zero", "1 2 3 4 5 12.5 99.99 8 9 -1.00 1 1 1 1 1 1 -1 -1",
			Job{1, 2, 3, 4, 5, 12, 99, 8, 9, -1, 1, 1, 1, 1, 1, 1, -1, -1}},
		{"small negative decimal truncates to 0", "1 2 3 4 5 -0.5 .5 8 9 7. 1 1 1 1 1 1 -1 -1",
			Job{1, 2, 3, 4, 5, 0, 0, 8, 9, 7, 1, 1, 1, 1, 1, 1, -1, -1}},
		{"tabs, leading and trailing blanks, CR", "\t 1\t2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 \r",
			Job{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}},
		{"plus sign", "+1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
			Job{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}},
		{"int64 limits", "9223372036854775807 -9223372036854775808 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
			Job{1<<63 - 1, -1 << 63, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18}},
	}
	for _, tc := range tests {
		for _, compress := range []bool{false, true} {
			name := tc.name
			data := []byte(tc.line + "\n")
			if compress {
				name += "/gzip"
				data = gz(t, data)
			}
			t.Run(name, func(t *testing.T) {
				_, jobs, err := readAll(t, data, "q.swf")
				if err != nil {
					t.Fatal(err)
				}
				if len(jobs) != 1 || jobs[0] != tc.want {
					t.Errorf("got %+v\nwant %+v", jobs, tc.want)
				}
			})
		}
	}
}

func TestMalformed(t *testing.T) {
	good := "1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1\n"
	tests := []struct {
		name string
		in   string
		msg  string // the whole error message
		is   error
	}{
		{"17 fields", "; Version: 2.2\n" + good + "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
			"t.swf:3: job line has 17 fields, want 18", ErrFieldCount},
		{"19 fields", good + good + "\n" + "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\n",
			"t.swf:4: job line has 19 fields, want 18", ErrFieldCount},
		{"one field", "garbage\n", "t.swf:1: job line has 1 fields, want 18", ErrFieldCount},
		{"count wins over number", "x 2 3\n", "t.swf:1: job line has 3 fields, want 18", ErrFieldCount},
		{"letters", good + "1 2 3 4x 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n",
			`t.swf:2: field 4 (run time): "4x" is not a number`, ErrNumber},
		{"exponent", "1 2 3 4 5 1e3 7 8 9 10 11 12 13 14 15 16 17 18\n",
			`t.swf:1: field 6 (average CPU time): "1e3" is not a number`, ErrNumber},
		{"lone sign", "1 2 3 4 5 6 7 - 9 10 11 12 13 14 15 16 17 18\n",
			`t.swf:1: field 8 (requested processors): "-" is not a number`, ErrNumber},
		{"lone point", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 .\n",
			`t.swf:1: field 18 (think time): "." is not a number`, ErrNumber},
		{"two points", "1 2 3 4 5 6 7 8 9 1.0.0 11 12 13 14 15 16 17 18\n",
			`t.swf:1: field 10 (requested memory): "1.0.0" is not a number`, ErrNumber},
		{"first bad field reported", "1 a 3 4 5 6 7 8 9 10 11 b 13 14 15 16 17 18\n",
			`t.swf:1: field 2 (submit time): "a" is not a number`, ErrNumber},
		{"overflow", "1 9223372036854775808 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n",
			`t.swf:1: field 2 (submit time): "9223372036854775808" is out of range`, ErrNumber},
		{"huge", "1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 99999999999999999999999999999999999999999999999999\n",
			`t.swf:1: field 18 (think time): "9999999999999999999999999999999999999999"... is out of range`, ErrNumber},
		{"header not a number", "; Version: 2.2\n; MaxProcs: many\n" + good,
			`t.swf:2: header MaxProcs: "many" does not start with an integer`, ErrHeader},
		{"header empty number", "; MaxNodes:\n" + good,
			`t.swf:1: header MaxNodes: "" does not start with an integer`, ErrHeader},
		{"header overflow", "; UnixStartTime: 99999999999999999999\n",
			`t.swf:1: header UnixStartTime: "99999999999999999999" is out of range`, ErrHeader},
		{"too long line", good + strings.Repeat("1 ", MaxLineLen/2+1) + "\n",
			"t.swf:2: line longer than 1048576 bytes", ErrLineTooLong},
	}
	for _, tc := range tests {
		for _, compress := range []bool{false, true} {
			name, data := tc.name, []byte(tc.in)
			if compress {
				name, data = name+"/gzip", gz(t, data)
			}
			t.Run(name, func(t *testing.T) {
				_, _, err := readAll(t, data, "t.swf")
				var le *LineError
				if !errors.As(err, &le) {
					t.Fatalf("error %v (%T), want a *LineError", err, err)
				}
				if err.Error() != tc.msg {
					t.Errorf("message\n got %s\nwant %s", err, tc.msg)
				}
				if !errors.Is(err, tc.is) {
					t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
				}
			})
		}
	}
}

func TestMalformedLineDoesNotStopReader(t *testing.T) {
	in := "1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1\nbad line\n\n; late comment\n3 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1"
	r, err := NewReader(strings.NewReader(in), "m.swf")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for {
		j, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			got = append(got, err.Error())
			continue
		}
		got = append(got, fmt.Sprintf("job %d at line %d", j.JobID, r.Line()))
	}
	want := []string{"job 1 at line 1", "m.swf:2: job line has 2 fields, want 18", "job 3 at line 5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after EOF: %v, want io.EOF again", err)
	}
}

func TestGzip(t *testing.T) {
	plain := []byte(ctcLike)
	dir := t.TempDir()
	files := map[string][]byte{
		"plain.swf":        plain,
		"packed.swf.gz":    gz(t, plain),
		"packed-no-ext":    gz(t, plain), // detected by magic, not name
		"plain-but-gz.gz":  plain,        // a .gz name does not force gzip
		"concatenated.gz":  append(gz(t, plain[:100]), gz(t, plain[100:])...),
		"single-byte.swf":  []byte("\x1f"), // too short for magic: one job line "\x1f"
		"empty.swf.gz":     nil,
		"only-header.swf":  []byte("; Version: 2.2"),
		"crlf-packed.gz":   gz(t, bytes.ReplaceAll(plain, []byte("\n"), []byte("\r\n"))),
		"header-only.gz":   gz(t, []byte("; MaxProcs: 3\n")),
		"trailing-ws.swf":  append(append([]byte{}, plain...), " \n\t\n"...),
		"no-final-nl.swf":  bytes.TrimSuffix(plain, []byte("\n")),
		"no-final-nl.gz":   gz(t, bytes.TrimSuffix(plain, []byte("\n"))),
		"late-comment.swf": append(append([]byte{}, plain...), "; trailer\n"...),
	}
	wantJobs := map[string]int{"single-byte.swf": -1, "empty.swf.gz": 0, "only-header.swf": 0, "header-only.gz": 0}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			r, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					n = -1
					if !strings.HasPrefix(err.Error(), path+":1: ") {
						t.Errorf("error %q does not start with %q", err, path+":1: ")
					}
					break
				}
				n++
			}
			want, ok := wantJobs[name]
			if !ok {
				want = 2
			}
			if n != want {
				t.Errorf("read %d jobs, want %d", n, want)
			}
			if err := r.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			if err := r.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if _, err := r.Next(); err != ErrClosed {
				t.Errorf("Next after Close: %v, want ErrClosed", err)
			}
		})
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.swf"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v, want os.ErrNotExist", err)
	}
}

func TestCorruptGzip(t *testing.T) {
	body := make([]byte, 0, 64<<10)
	for i := 0; len(body) < 60<<10; i++ {
		body = append(body, "1 0 0 1 1 -1 -1 1 1 -1 1 1 1 -1 -1 -1 -1 -1\n"...)
	}
	packed := gz(t, body)
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", packed[:len(packed)/2], "reading: unexpected EOF"},
		{"bad checksum", func() []byte {
			b := bytes.Clone(packed)
			b[len(b)-8] ^= 0xff // CRC-32 in the trailer
			return b
		}(), "reading: gzip: invalid checksum"},
		{"bad header", []byte{0x1f, 0x8b, 0, 0, 0}, "reading gzip header: unexpected EOF"},
		{"garbage after member", append(bytes.Clone(packed), "this is not gzip"...), "reading: gzip: invalid header"},
		{"short garbage after member", append(bytes.Clone(packed), "junk"...), "reading: unexpected EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, jobs, err := readAll(t, tc.data, "c.swf.gz")
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("read %d jobs, error %v (%T); want a *LineError", len(jobs), err, err)
			}
			if !strings.HasSuffix(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "c.swf.gz:") {
				t.Errorf("error %q, want c.swf.gz:N: ...%s", err, tc.want)
			}
			if le.Line != len(jobs)+1 {
				t.Errorf("error at line %d after %d jobs, want line %d", le.Line, len(jobs), len(jobs)+1)
			}
		})
	}
}

// TestLongContinuation guards against quadratic joining of continuation
// lines: 100,000 of them must parse at once.
func TestLongContinuation(t *testing.T) {
	var b strings.Builder
	b.WriteString("; Note: start\n")
	const n = 100000
	for range n {
		b.WriteString(";    more text on a continuation line\n")
	}
	b.WriteString("; MaxProcs: 5\n")
	h, _, err := readAll(t, []byte(b.String()), "long.swf")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(h.Fields["Note"][0], "\n"); got != n || h.MaxProcs != 5 || len(h.Raw) != n+2 {
		t.Errorf("Note has %d newlines, MaxProcs %d, %d raw lines; want %d, 5, %d", got, h.MaxProcs, len(h.Raw), n, n+2)
	}
}
