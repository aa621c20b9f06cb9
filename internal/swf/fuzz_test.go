package swf

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// FuzzReader feeds arbitrary bytes, plain and gzipped, to NewReader and Next:
// they must never panic, every error must be a *LineError whose message
// starts with "NAME:LINE: ", line numbers must not go backwards, and Sim must
// keep its promises on every job read.
func FuzzReader(f *testing.F) {
	seeds := []string{
		"",
		ctcLike,
		"; MaxProcs: 338 (x)\n; Note: a\n;   b\n1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\n",
		"1 2 3 4 5 6.5 -1.00 8 9 10 11 12 13 14 15 16 17 18\r\n\n; c\n",
		"1 2 3\n",
		"; MaxNodes: x\n",
		"-9223372036854775808 9223372036854775807 . +. -.5 5. 1 1 1 1 1 1 1 1 1 1 1 1",
		"\x1f\x8b",
	}
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, compress bool) {
		if compress {
			data = gzipFast(data)
		}
		r, err := NewReader(bytes.NewReader(data), "fz")
		if err != nil {
			checkErr(t, err)
			if compress && !errors.Is(err, ErrHeader) && !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("well-formed gzip gave a non-header error: %v", err)
			}
			return
		}
		defer r.Close()
		h := r.Header()
		units := MachineUnits(h)
		if units < 0 {
			t.Fatalf("MachineUnits = %d", units)
		}
		last := r.Line()
		for i := 0; ; i++ {
			j, err := r.Next()
			if err == io.EOF {
				break
			}
			if r.Line() < last {
				t.Fatalf("line went back from %d to %d", last, r.Line())
			}
			last = r.Line()
			if err != nil {
				checkErr(t, err)
				if i > len(data) {
					t.Fatalf("more errors than bytes: the reader is not advancing")
				}
				continue
			}
			s, why := j.Sim(units)
			if why == SkipNone {
				if s.Run <= 0 || s.Units <= 0 || s.Units > int64(units) || s.ReqTime <= 0 {
					t.Fatalf("Sim(%d) of %+v gave %+v", units, j, s)
				}
			} else if s != (SimJob{}) || why.String() == "" {
				t.Fatalf("skipped (%v) with %+v", why, s)
			}
		}
	})
}

func checkErr(t *testing.T, err error) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not a *LineError", err, err)
	}
	if le.Line < 1 || !strings.HasPrefix(err.Error(), "fz:") {
		t.Fatalf("bad location in %q (line %d)", err, le.Line)
	}
}

// gzipper is reused across fuzz calls: a fresh gzip.Writer per call costs
// more than the reading under test.
var gzipper struct {
	sync.Mutex
	w *gzip.Writer
}

func gzipFast(data []byte) []byte {
	gzipper.Lock()
	defer gzipper.Unlock()
	var b bytes.Buffer
	if gzipper.w == nil {
		gzipper.w, _ = gzip.NewWriterLevel(&b, gzip.BestSpeed)
	} else {
		gzipper.w.Reset(&b)
	}
	gzipper.w.Write(data)
	gzipper.w.Close()
	return b.Bytes()
}

// FuzzParseJob checks the hand-rolled job-line parser against a slow oracle
// built from the standard library (strings.FieldsFunc, regexp, strconv).
func FuzzParseJob(f *testing.F) {
	for _, s := range []string{
		"1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18",
		"    1        0 588530    937  306 142.00    -1   -1  35100    -1  1  97  -1 307  3 -1 -1 -1",
		"-9223372036854775808 9223372036854775807 +0 -0.9 .5 5. 1 1 1 1 1 1 1 1 1 1 1 1",
		"9223372036854775808 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1",
		"1 2 3", "1e3 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", "\t1\v2\f3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18\r",
	} {
		f.Add(s)
	}
	number := regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)
	f.Fuzz(func(t *testing.T, line string) {
		got, err := parseJob([]byte(line))
		fields := strings.FieldsFunc(line, func(r rune) bool { return r < utf8.RuneSelf && isSpace(byte(r)) })
		if len(fields) != NumFields {
			if !errors.Is(err, ErrFieldCount) {
				t.Fatalf("%d fields: got %+v, %v; want ErrFieldCount", len(fields), got, err)
			}
			return
		}
		var want [NumFields]int64
		for i, fld := range fields {
			if !number.MatchString(fld) {
				if !errors.Is(err, ErrNumber) {
					t.Fatalf("field %d %q: got %+v, %v; want ErrNumber", i+1, fld, got, err)
				}
				return
			}
			intPart, _, _ := strings.Cut(fld, ".")
			if intPart == "" || intPart == "+" || intPart == "-" {
				intPart += "0"
			}
			v, perr := strconv.ParseInt(intPart, 10, 64)
			if perr != nil {
				if !errors.Is(err, ErrNumber) || !strings.Contains(err.Error(), "out of range") {
					t.Fatalf("field %d %q: got %+v, %v; want out of range", i+1, fld, got, err)
				}
				return
			}
			want[i] = v
		}
		if err != nil {
			t.Fatalf("got error %v, want %v", err, want)
		}
		if got != (Job{want[0], want[1], want[2], want[3], want[4], want[5], want[6], want[7], want[8],
			want[9], want[10], want[11], want[12], want[13], want[14], want[15], want[16], want[17]}) {
			t.Fatalf("got %+v, want %v", got, want)
		}
	})
}
