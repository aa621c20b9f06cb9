package swf

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxLineLen is the longest line, in bytes, a Reader accepts. Real SWF job
// lines are under 200 bytes; a longer line is an error (ErrLineTooLong),
// not a reason to buffer without bound.
const MaxLineLen = 1 << 20

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("swf: reader closed")

// LineError is an error about one line of a trace: a malformed job line or
// header value, or a failure to read (Err wraps the read or gzip error).
// Its message is "FILE:LINE: what was wrong".
type LineError struct {
	File string // the name given to NewReader, or the path given to Open
	Line int    // 1-based line number; for a read error, the line being read
	Err  error  // what was wrong; see ErrFieldCount, ErrNumber, ErrHeader, ErrLineTooLong
}

// Error returns "FILE:LINE: " followed by Err's message.
func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// Reader reads the jobs of one SWF trace in file order. Create it with Open
// or NewReader; it is not safe for concurrent use.
type Reader struct {
	name    string
	header  Header
	sc      *bufio.Scanner
	line    int  // number of the line last scanned
	pending bool // the scanner holds the first job line, not yet returned
	err     error
	src     *errTracker
	gz      *gzip.Reader // nil for plain input
	file    *os.File     // nil unless opened by Open
}

// Open opens the SWF file at path, gunzipping it if it starts with the gzip
// magic bytes (whatever its name), and reads its header. Errors are those
// of os.Open and of NewReader, with path as the file name. Close the Reader
// to close the file.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.file = f
	return r, nil
}

// NewReader reads an SWF trace from in, gunzipping it if it starts with the
// gzip magic bytes 1f 8b, and reads the header (every leading comment line)
// before it returns. name is used in error messages only. The error, if
// any, is a *LineError (a malformed numeric header value, a too-long line,
// a read or gzip error). An empty input is a valid trace with no header and
// no jobs.
func NewReader(in io.Reader, name string) (*Reader, error) {
	r := &Reader{name: name}
	br := bufio.NewReaderSize(in, 16<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, r.lineErr(1, err)
	}
	var src io.Reader = br
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, r.lineErr(1, fmt.Errorf("reading gzip header: %w", err))
		}
		r.gz = gz
		src = gz
	}
	r.src = &errTracker{r: src}
	r.sc = bufio.NewScanner(r.src)
	r.sc.Buffer(make([]byte, 8<<10), MaxLineLen)
	r.sc.Split(r.scanLines)
	if err := r.readHeader(); err != nil {
		r.closeGzip()
		return nil, err
	}
	return r, nil
}

// readHeader parses comment and blank lines up to the first job line,
// which it leaves in the scanner for Next.
func (r *Reader) readHeader() error {
	var p headerParser
	for r.sc.Scan() {
		r.line++
		line := r.sc.Bytes()
		switch lineKind(line) {
		case blankLine:
			continue
		case commentLine:
			if err := p.add(line); err != nil {
				return r.lineErr(r.line, err)
			}
			continue
		}
		r.pending = true
		break
	}
	if !r.pending {
		if err := r.scanErr(); err != io.EOF {
			return err
		}
	}
	r.header = p.finish()
	return nil
}

// Header returns the trace's header. Its Raw and Fields are shared with
// the Reader and must not be modified.
func (r *Reader) Header() Header { return r.header }

// Name returns the file name used in error messages.
func (r *Reader) Name() string { return r.name }

// Line returns the number of the line last read (1-based; 0 before any).
// After Next returns a job, it is that job's line.
func (r *Reader) Line() int { return r.line }

// Next returns the next job, skipping blank and comment lines, or io.EOF
// after the last one. A malformed job line gives a *LineError and does not
// stop the reader: the following call goes on with the next line. A read
// or gzip error (also a *LineError) and io.EOF are sticky, and so is
// ErrClosed after Close.
func (r *Reader) Next() (Job, error) {
	if r.err != nil {
		return Job{}, r.err
	}
	for {
		if r.pending {
			r.pending = false
		} else {
			if !r.sc.Scan() {
				r.err = r.scanErr()
				return Job{}, r.err
			}
			r.line++
		}
		line := r.sc.Bytes()
		if lineKind(line) != jobLine {
			continue
		}
		j, err := parseJob(line)
		if err != nil {
			return Job{}, r.lineErr(r.line, err)
		}
		return j, nil
	}
}

// Close releases the Reader's resources: the gzip decompressor, and the
// file if the Reader came from Open. It does not close the io.Reader given
// to NewReader. After Close, Next returns ErrClosed.
func (r *Reader) Close() error {
	if r.err == ErrClosed {
		return nil
	}
	r.err = ErrClosed
	r.closeGzip()
	if r.file != nil {
		err := r.file.Close()
		r.file = nil
		return err
	}
	return nil
}

func (r *Reader) closeGzip() {
	if r.gz != nil {
		r.gz.Close() // only reports an earlier decompression error
		r.gz = nil
	}
}

// errTracker remembers the first read error other than io.EOF.
type errTracker struct {
	r   io.Reader
	err error
}

func (e *errTracker) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// scanLines is bufio.ScanLines, except that an unterminated last line cut
// short by a read error (a truncated gzip stream) is not returned as a
// line: it would parse as a wrong job or a misleading malformed line. The
// read error is reported instead.
func (r *Reader) scanLines(data []byte, atEOF bool) (int, []byte, error) {
	if atEOF && r.src.err != nil && bytes.IndexByte(data, '\n') < 0 {
		return 0, nil, r.src.err
	}
	return bufio.ScanLines(data, atEOF)
}

// scanErr turns the end of scanning into io.EOF or a *LineError.
func (r *Reader) scanErr() error {
	err := r.sc.Err()
	switch {
	case err == nil:
		return io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		return r.lineErr(r.line+1, &detailError{
			msg:  fmt.Sprintf("line longer than %d bytes", MaxLineLen),
			kind: ErrLineTooLong,
		})
	default:
		return r.lineErr(r.line+1, fmt.Errorf("reading: %w", err))
	}
}

func (r *Reader) lineErr(line int, err error) *LineError {
	return &LineError{File: r.name, Line: line, Err: err}
}

type kind int

const (
	blankLine kind = iota
	commentLine
	jobLine
)

// lineKind classifies a line by its first non-blank byte.
func lineKind(line []byte) kind {
	for _, c := range line {
		if isSpace(c) {
			continue
		}
		if c == ';' {
			return commentLine
		}
		return jobLine
	}
	return blankLine
}
