package swf

import (
	"fmt"
	"math"
	"strings"
)

// Header is the leading block of ';' comment lines of an SWF file.
//
// The typed fields hold the standard SWF header fields; a field absent from
// the file is "" or 0. When a key appears more than once, the typed field
// holds its first value. A string value is trimmed of surrounding blanks.
// A comment line whose text starts with two or more blanks after the ';'
// continues the field above it (Information, Note and Copyright are often
// written so): its trimmed text is appended to that value after a "\n". A
// comment line that is neither a field nor a continuation is kept in Raw
// only, and ends any continuation. A numeric value is the integer its text starts with:
// "MaxNodes: 338 (batch partition; 512 total)" gives MaxNodes 338, and the
// full text stays in Fields.
type Header struct {
	Version        string // SWF version of the file, e.g. "2.2"
	Computer       string // machine, e.g. "IBM SP2"
	Installation   string // site
	Acknowledge    string // who provided the log
	Information    string // URLs, one per line
	Conversion     string // who converted the log to SWF, and when
	MaxJobs        int    // number of jobs (or the job-number range)
	MaxRecords     int    // number of records in the file
	Preemption     string // "No", "Yes", "Double", "TS"
	UnixStartTime  int64  // Unix time of submit time 0
	TimeZone       int64  // deprecated offset from UTC, seconds; prefer TimeZoneString
	TimeZoneString string // tz database name, e.g. "US/Eastern"
	StartTime      string // start of the log, as written, e.g. "Wed Jun 26 17:06:00 EDT 1996"
	EndTime        string // end of the log, as written
	MaxNodes       int    // nodes in the machine (or partition) the log covers
	MaxProcs       int    // processors in the machine the log covers
	MaxRuntime     int64  // the site's walltime limit, seconds
	MaxMemory      int64  // the site's memory limit per processor, KB
	AllowOveruse   string // whether jobs could exceed their request: "Yes"/"No"
	MaxQueues      int    // number of queues
	MaxPartitions  int    // number of partitions

	// Raw holds every comment line of the header, verbatim and in order
	// (without the line terminator), including free-text and empty ";"
	// lines: some trace licences require keeping the header in any copy.
	// Comment lines after the first job are not included.
	Raw []string

	// Fields holds every "Key: value" field of the header, including those
	// that also have a typed field above, as written (values trimmed,
	// continuation lines appended after "\n"), one entry per occurrence in
	// file order: Fields["Queue"] lists every queue line. The map and its
	// slices are shared with the Reader; do not modify them.
	Fields map[string][]string
}

// MachineUnits is the number of schedulable units (processors) of the
// machine a trace covers: MaxProcs if positive, else MaxNodes if positive,
// else 0 (unknown; the caller must supply the size).
func MachineUnits(h Header) int {
	if h.MaxProcs > 0 {
		return h.MaxProcs
	}
	if h.MaxNodes > 0 {
		return h.MaxNodes
	}
	return 0
}

// headerParser accumulates a Header line by line.
type headerParser struct {
	h     Header
	key   string   // key of the field that indented lines continue, or ""
	parts []string // that field's value so far, one entry per line
}

// flush ends the current field, storing its continued value in Fields
// (joined once, so long continuations cost linear time).
func (p *headerParser) flush() {
	if len(p.parts) > 1 {
		vs := p.h.Fields[p.key]
		vs[len(vs)-1] = strings.Join(p.parts, "\n")
	}
	p.key, p.parts = "", p.parts[:0]
}

// add parses one comment line (its first non-blank byte is ';').
func (p *headerParser) add(line []byte) error {
	s := string(line)
	p.h.Raw = append(p.h.Raw, s)
	s = strings.TrimLeft(s, " \t\r\v\f")[1:] // drop the ';'
	body := strings.TrimLeft(s, " \t\r\v\f")
	indent := len(s) - len(body)
	body = strings.TrimRight(body, " \t\r\v\f")
	if indent >= 2 && p.key != "" && body != "" {
		p.parts = append(p.parts, body)
		return nil
	}
	p.flush()
	key, val, ok := splitField(body)
	if !ok {
		return nil
	}
	if p.h.Fields == nil {
		p.h.Fields = make(map[string][]string)
	}
	first := len(p.h.Fields[key]) == 0
	p.h.Fields[key] = append(p.h.Fields[key], val)
	p.key, p.parts = key, append(p.parts, val)
	return p.setTyped(key, val, first)
}

// splitField splits "Key: value" where Key is a letter followed by letters,
// digits, '_' or '-', and the colon is followed by a blank or the end.
func splitField(s string) (key, val string, ok bool) {
	i := 0
	for i < len(s) && (isLetter(s[i]) || i > 0 && (isDigit(s[i]) || s[i] == '_' || s[i] == '-')) {
		i++
	}
	if i == 0 || i >= len(s) || s[i] != ':' {
		return "", "", false
	}
	if i+1 < len(s) && !isSpace(s[i+1]) {
		return "", "", false // "http://..." is not a field
	}
	return s[:i], strings.Trim(s[i+1:], " \t\r\v\f"), true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// setTyped stores a standard field's value in its typed field (only the
// first occurrence) and validates every occurrence of a numeric field.
func (p *headerParser) setTyped(key, val string, first bool) error {
	h := &p.h
	if stringField(h, key) != nil {
		return nil // filled from Fields by finish, with continuations
	}
	var i64 *int64
	var i *int
	switch key {
	case "MaxJobs":
		i = &h.MaxJobs
	case "MaxRecords":
		i = &h.MaxRecords
	case "MaxNodes":
		i = &h.MaxNodes
	case "MaxProcs":
		i = &h.MaxProcs
	case "MaxQueues":
		i = &h.MaxQueues
	case "MaxPartitions":
		i = &h.MaxPartitions
	case "UnixStartTime":
		i64 = &h.UnixStartTime
	case "TimeZone":
		i64 = &h.TimeZone
	case "MaxRuntime":
		i64 = &h.MaxRuntime
	case "MaxMemory":
		i64 = &h.MaxMemory
	default:
		return nil
	}
	v, why := leadingInt(val)
	if why == "" && i != nil && (v > math.MaxInt || v < math.MinInt) {
		why = "is out of range"
	}
	if why != "" {
		return &detailError{
			msg:  fmt.Sprintf("header %s: %s %s", key, quote([]byte(val)), why),
			kind: ErrHeader,
		}
	}
	if !first {
		return nil
	}
	if i != nil {
		*i = int(v)
	} else {
		*i64 = v
	}
	return nil
}

// stringKeys are the standard header fields with a typed string field.
var stringKeys = [...]string{
	"Version", "Computer", "Installation", "Acknowledge", "Information",
	"Conversion", "Preemption", "TimeZoneString", "StartTime", "EndTime",
	"AllowOveruse",
}

// stringField is the typed string field of h for key, or nil.
func stringField(h *Header, key string) *string {
	switch key {
	case "Version":
		return &h.Version
	case "Computer":
		return &h.Computer
	case "Installation":
		return &h.Installation
	case "Acknowledge":
		return &h.Acknowledge
	case "Information":
		return &h.Information
	case "Conversion":
		return &h.Conversion
	case "Preemption":
		return &h.Preemption
	case "TimeZoneString":
		return &h.TimeZoneString
	case "StartTime":
		return &h.StartTime
	case "EndTime":
		return &h.EndTime
	case "AllowOveruse":
		return &h.AllowOveruse
	}
	return nil
}

// finish fills the typed string fields from Fields (now that continuation
// lines are in) and returns the Header.
func (p *headerParser) finish() Header {
	p.flush()
	for _, key := range stringKeys {
		if vs := p.h.Fields[key]; len(vs) > 0 {
			*stringField(&p.h, key) = vs[0]
		}
	}
	return p.h
}

// leadingInt parses the integer a header value starts with: an optional
// sign and at least one digit, followed by the end or a non-digit.
func leadingInt(s string) (int64, string) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j == i {
		return 0, "does not start with an integer"
	}
	v, _, why := parseNumber([]byte(s[:j]), 0)
	return v, why
}
