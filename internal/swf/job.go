package swf

import (
	"errors"
	"fmt"
	"math"
)

// NumFields is the number of fields in an SWF job line.
const NumFields = 18

// Job is one SWF job record: the 18 fields of one line, in file order.
// Every field is -1 when the trace does not know it. Times and durations
// are in seconds, memory in kilobytes per processor.
type Job struct {
	JobID        int64 // field 1: job number, counting from 1
	Submit       int64 // field 2: submit time, seconds since the header's UnixStartTime
	Wait         int64 // field 3: seconds from submit to start
	Run          int64 // field 4: run time in seconds (wall clock, end - start)
	AllocProcs   int64 // field 5: number of allocated processors
	AvgCPU       int64 // field 6: average CPU time used per processor, seconds (truncated)
	UsedMem      int64 // field 7: average used memory per processor, KB (truncated)
	ReqProcs     int64 // field 8: number of requested processors
	ReqTime      int64 // field 9: requested time (walltime limit), seconds
	ReqMem       int64 // field 10: requested memory per processor, KB
	Status       int64 // field 11: 1 completed, 0 failed, 5 cancelled, 2-4 checkpoint/swap partials
	User         int64 // field 12: user ID, a number from 1
	Group        int64 // field 13: group ID, a number from 1
	Executable   int64 // field 14: executable (application) number
	Queue        int64 // field 15: queue number (see the header's Queue lines)
	Partition    int64 // field 16: partition number
	PrecedingJob int64 // field 17: job number this job depends on
	ThinkTime    int64 // field 18: seconds between the preceding job's end and this submit
}

// fieldNames are the SWF names of the fields, for error messages.
var fieldNames = [NumFields]string{
	"job number", "submit time", "wait time", "run time",
	"allocated processors", "average CPU time", "used memory",
	"requested processors", "requested time", "requested memory",
	"status", "user ID", "group ID", "executable number",
	"queue number", "partition number", "preceding job number", "think time",
}

// Conditions a *LineError's Err matches with errors.Is.
var (
	// ErrFieldCount: a job line has other than NumFields fields.
	ErrFieldCount = errors.New("swf: wrong number of fields")
	// ErrNumber: a job field is not a number or does not fit in an int64.
	ErrNumber = errors.New("swf: malformed number")
	// ErrHeader: a numeric header value (MaxProcs, ...) does not start
	// with an integer or does not fit.
	ErrHeader = errors.New("swf: malformed header value")
	// ErrLineTooLong: a line is longer than MaxLineLen bytes.
	ErrLineTooLong = errors.New("swf: line too long")
)

// detailError is a sentence about one line that still matches its
// condition (ErrFieldCount, ...) with errors.Is.
type detailError struct {
	msg  string
	kind error
}

func (e *detailError) Error() string { return e.msg }
func (e *detailError) Unwrap() error { return e.kind }

// quote shows at most 40 bytes of a field in an error message.
func quote(b []byte) string {
	const max = 40
	if len(b) > max {
		return fmt.Sprintf("%q...", b[:max])
	}
	return fmt.Sprintf("%q", b)
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'
}

// parseJob parses one job line in a single pass, without allocating
// unless the line is malformed. A field count error wins over a number
// error.
func parseJob(line []byte) (Job, error) {
	var f [NumFields]int64
	n := 0
	var numErr error
	for i := 0; i < len(line); {
		if isSpace(line[i]) {
			i++
			continue
		}
		start := i
		v, end, why := parseNumber(line, i)
		if n < NumFields {
			f[n] = v
			if why != "" && numErr == nil {
				numErr = &detailError{
					msg:  fmt.Sprintf("field %d (%s): %s %s", n+1, fieldNames[n], quote(line[start:end]), why),
					kind: ErrNumber,
				}
			}
		}
		n++
		i = end
	}
	if n != NumFields {
		return Job{}, &detailError{
			msg:  fmt.Sprintf("job line has %d fields, want %d", n, NumFields),
			kind: ErrFieldCount,
		}
	}
	if numErr != nil {
		return Job{}, numErr
	}
	return Job{
		JobID: f[0], Submit: f[1], Wait: f[2], Run: f[3],
		AllocProcs: f[4], AvgCPU: f[5], UsedMem: f[6], ReqProcs: f[7],
		ReqTime: f[8], ReqMem: f[9], Status: f[10], User: f[11],
		Group: f[12], Executable: f[13], Queue: f[14], Partition: f[15],
		PrecedingJob: f[16], ThinkTime: f[17],
	}, nil
}

// parseNumber parses the field of b that starts at i (a non-blank byte)
// and ends at the next blank or the end of b, which it returns as end. A
// number is [+-]digits[.digits], with at least one digit on either side of
// the point; its fraction is truncated toward zero. On failure why is a
// phrase saying what is wrong ("is not a number", "is out of range").
func parseNumber(b []byte, i int) (v int64, end int, why string) {
	neg := false
	if b[i] == '+' || b[i] == '-' {
		neg = b[i] == '-'
		i++
	}
	var u uint64 // magnitude, exact while <= 1<<63
	digits := 0
	over := false
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			break
		}
		if u > (1<<63)/10 {
			over = true // u*10 > 1<<63 whatever d is
		} else {
			u = u*10 + uint64(d) // <= 1<<63 + 9: no wrap
		}
		digits++
	}
	if i < len(b) && b[i] == '.' {
		for i++; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
			digits++
		}
	}
	if i < len(b) && !isSpace(b[i]) || digits == 0 {
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		return 0, i, "is not a number"
	}
	if over || (!neg && u > math.MaxInt64) || (neg && u > 1<<63) {
		return 0, i, "is out of range"
	}
	if neg {
		return -int64(u), i, "" // u == 1<<63 gives MinInt64, as wanted
	}
	return int64(u), i, ""
}
