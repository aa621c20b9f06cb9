package hostlist

import (
	"errors"
	"fmt"
)

// Conditions an *Error's Err matches with errors.Is.
var (
	// ErrSyntax: the input is not a well-formed hostlist (empty input or
	// element, bad brackets, a bad number or range, a character that
	// cannot be in a host name, a name longer than MaxNameLen).
	ErrSyntax = errors.New("hostlist: malformed hostlist")
	// ErrDuplicate: the input names some host more than once.
	ErrDuplicate = errors.New("hostlist: duplicate name")
	// ErrTooLarge: the input expands to more than MaxNames names or more
	// than MaxBytes bytes of names.
	ErrTooLarge = errors.New("hostlist: hostlist too large")
)

// Error is what Parse and Count return for input they refuse.
type Error struct {
	Input  string // the whole input, as given
	Pos    int    // byte offset of Part in Input
	Part   string // the offending text: a range, a bracket, an element, ...; "" for an empty element
	Reason string // what is wrong, and when possible how to write it instead
	Err    error  // ErrSyntax, ErrDuplicate or ErrTooLarge
}

// maxQuoted is how much of a long input an error message quotes.
const maxQuoted = 64

// Error returns "hostlist: INPUT: REASON". An input longer than 64 bytes is
// quoted as an excerpt around Pos, with the offset.
func (e *Error) Error() string {
	if len(e.Input) <= maxQuoted {
		return fmt.Sprintf("hostlist: %q: %s", e.Input, e.Reason)
	}
	lo := max(e.Pos-maxQuoted/4, 0)
	hi := min(lo+maxQuoted, len(e.Input))
	excerpt := e.Input[lo:hi]
	if lo > 0 {
		excerpt = "..." + excerpt
	}
	if hi < len(e.Input) {
		excerpt += "..."
	}
	return fmt.Sprintf("hostlist: %q (at byte %d): %s", excerpt, e.Pos, e.Reason)
}

// Unwrap returns Err, so that errors.Is(err, ErrSyntax) and the like work.
func (e *Error) Unwrap() error { return e.Err }
