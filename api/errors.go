package api

import (
	"errors"
	"fmt"
)

// Code is a stable error code on the wire. Codes never change meaning; new
// ones may be added, so a client must handle a code it does not know (it is
// still an *Error, and errors.Is matches no sentinel).
type Code string

// The error codes of protocol version 1.
const (
	// CodeInvalidArgument: the request is malformed or names something
	// impossible (bad hostlist, start in the past, unknown field). Retrying the
	// same request fails the same way.
	CodeInvalidArgument Code = "invalid_argument"
	// CodeNotFound: the job, reservation, user or instance does not exist.
	CodeNotFound Code = "not_found"
	// CodePermissionDenied: the caller is known but may not do this.
	CodePermissionDenied Code = "permission_denied"
	// CodeUnauthenticated: no usable credentials, or the server refused them.
	CodeUnauthenticated Code = "unauthenticated"
	// CodeConflict: the request contradicts current state (the name is taken,
	// the window overlaps another reservation).
	CodeConflict Code = "conflict"
	// CodeFailedPrecondition: the object is not in a state that allows this
	// (updating a running job's reservation, cancelling an ended job).
	CodeFailedPrecondition Code = "failed_precondition"
	// CodeNoResources: the request can never be satisfied with the resources
	// this instance has (more nodes than exist, oversubscribed QPU slots).
	CodeNoResources Code = "no_resources"
	// CodeUnavailable: the broker or instance cannot be reached or is not
	// serving; retrying later may succeed.
	CodeUnavailable Code = "unavailable"
	// CodeDeadlineExceeded: no reply came within the caller's deadline. The
	// request may or may not have been carried out.
	CodeDeadlineExceeded Code = "deadline_exceeded"
	// CodeCanceled: the caller cancelled the call before a reply came.
	CodeCanceled Code = "canceled"
	// CodeInternal: a bug or an unexpected failure inside the broker; the
	// broker log has the details under the reference in the message.
	CodeInternal Code = "internal"
	// CodeTooManyRequests: the caller has too many requests in flight or
	// waiting at once (the broker's per-user limits); retry when some
	// have been answered.
	CodeTooManyRequests Code = "too_many_requests"
	// CodeResourceExhausted: the broker cannot take changes now for want
	// of something it needs to keep them (the disk holding its store is
	// under its free-space reserve). An answer, not retried: it lasts
	// until staff act, and a user is told at once rather than after the
	// client's retries; asked again once staff have acted, it succeeds.
	CodeResourceExhausted Code = "resource_exhausted"
)

// Codes lists every code of this protocol version, in table order.
var Codes = []Code{
	CodeInvalidArgument, CodeNotFound, CodePermissionDenied, CodeUnauthenticated,
	CodeConflict, CodeFailedPrecondition, CodeNoResources, CodeUnavailable,
	CodeDeadlineExceeded, CodeCanceled, CodeInternal, CodeTooManyRequests,
	CodeResourceExhausted,
}

// Known reports whether c is a code of this protocol version.
func (c Code) Known() bool {
	for _, k := range Codes {
		if c == k {
			return true
		}
	}
	return false
}

// Error is an error that travels on the wire: a stable code and a sentence a
// person can act on ("job 42 does not exist; list your jobs with 'strata
// jobs'"). Error() is the message alone, so it prints well as is.
//
// Two *Error values match under errors.Is when their codes are equal, so
// errors.Is(err, ErrNotFound) holds for any not_found error, however it was
// made or decoded.
type Error struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`

	cause error // local only: what Errorf wrapped with %w; never on the wire
}

// Error returns the message (or the code when there is no message).
func (e *Error) Error() string {
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Unwrap returns the error wrapped with %w by Errorf, if any.
func (e *Error) Unwrap() error { return e.cause }

// Sentinel errors, one per code, for errors.Is.
var (
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument, Message: "invalid argument"}
	ErrNotFound           = &Error{Code: CodeNotFound, Message: "not found"}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied, Message: "permission denied"}
	ErrUnauthenticated    = &Error{Code: CodeUnauthenticated, Message: "unauthenticated"}
	ErrConflict           = &Error{Code: CodeConflict, Message: "conflict"}
	ErrFailedPrecondition = &Error{Code: CodeFailedPrecondition, Message: "failed precondition"}
	ErrNoResources        = &Error{Code: CodeNoResources, Message: "no resources"}
	ErrUnavailable        = &Error{Code: CodeUnavailable, Message: "unavailable"}
	ErrDeadlineExceeded   = &Error{Code: CodeDeadlineExceeded, Message: "deadline exceeded"}
	ErrCanceled           = &Error{Code: CodeCanceled, Message: "canceled"}
	ErrInternal           = &Error{Code: CodeInternal, Message: "internal error"}
	ErrTooManyRequests    = &Error{Code: CodeTooManyRequests, Message: "too many requests"}
	ErrResourceExhausted  = &Error{Code: CodeResourceExhausted, Message: "resource exhausted"}
)

// Errorf returns an *Error with the given code and a message formatted as by
// fmt.Errorf. An operand wrapped with %w stays reachable through errors.Is
// and errors.As on the result (locally only: the wire carries code and
// message).
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), cause: errors.Unwrap(err)}
}

// CodeOf returns the code of the first *Error in err's chain, or CodeInternal
// when there is none (and "" for a nil err).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}
