package api

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestErrorIs(t *testing.T) {
	err := Errorf(CodeNotFound, "job %d does not exist; list your jobs with 'strata jobs'", 42)
	if !errors.Is(err, ErrNotFound) {
		t.Error("errors.Is(not_found error, ErrNotFound) = false")
	}
	if errors.Is(err, ErrPermissionDenied) {
		t.Error("errors.Is(not_found error, ErrPermissionDenied) = true")
	}
	if got := err.Error(); got != "job 42 does not exist; list your jobs with 'strata jobs'" {
		t.Errorf("Error() = %q", got)
	}
	wrapped := fmt.Errorf("core: %w", err)
	if !errors.Is(wrapped, ErrNotFound) || CodeOf(wrapped) != CodeNotFound {
		t.Error("wrapping lost the code")
	}
	if CodeOf(errors.New("boom")) != CodeInternal || CodeOf(nil) != "" {
		t.Error("CodeOf of a plain error is not internal")
	}
	cause := Errorf(CodeDeadlineExceeded, "no reply: %w", context.DeadlineExceeded)
	if !errors.Is(cause, context.DeadlineExceeded) || !errors.Is(cause, ErrDeadlineExceeded) {
		t.Error("Errorf lost the %w operand")
	}
}

func TestCodesTable(t *testing.T) {
	seen := map[Code]bool{}
	for _, c := range Codes {
		if seen[c] {
			t.Errorf("code %s twice", c)
		}
		seen[c] = true
		if !c.Known() {
			t.Errorf("%s not Known", c)
		}
	}
	for _, s := range []*Error{ErrInvalidArgument, ErrNotFound, ErrPermissionDenied, ErrUnauthenticated, ErrConflict,
		ErrFailedPrecondition, ErrNoResources, ErrUnavailable, ErrDeadlineExceeded, ErrCanceled, ErrInternal, ErrTooManyRequests,
		ErrResourceExhausted} {
		if !seen[s.Code] {
			t.Errorf("sentinel %s has no code in the table", s.Code)
		}
		delete(seen, s.Code)
	}
	if len(seen) != 0 {
		t.Errorf("codes without a sentinel: %v", seen)
	}
	if Code("teapot").Known() {
		t.Error("unknown code Known")
	}
}

func TestEnvelope(t *testing.T) {
	b, err := EncodeReply(WhoamiReply{User: "alice", Path: "root"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"v":1,"data":{"user":"alice","admin":false,"path":"root"}}`; got != want {
		t.Errorf("EncodeReply = %s, want %s", got, want)
	}
	var who WhoamiReply
	if err := DecodeReply(b, &who); err != nil || who.User != "alice" {
		t.Errorf("DecodeReply = %+v, %v", who, err)
	}
	if b, _ := EncodeReply(nil); string(b) != `{"v":1}` {
		t.Errorf("EncodeReply(nil) = %s", b)
	}

	b = EncodeError(Errorf(CodeNotFound, "job 42 does not exist"))
	if got, want := string(b), `{"v":1,"error":{"code":"not_found","message":"job 42 does not exist"}}`; got != want {
		t.Errorf("EncodeError = %s, want %s", got, want)
	}
	err = DecodeReply(b, &who)
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeNotFound || e.Message != "job 42 does not exist" || !errors.Is(err, ErrNotFound) {
		t.Errorf("DecodeReply(error) = %#v", err)
	}

	// Lenient on unknown reply fields, strict on the version.
	if err := DecodeReply([]byte(`{"v":1,"data":{"user":"bob","shoe_size":44}}`), &who); err != nil || who.User != "bob" {
		t.Errorf("unknown reply field: %v", err)
	}
	if err := DecodeReply([]byte(`{"v":2,"data":{}}`), &who); !errors.Is(err, ErrInternal) {
		t.Errorf("version 2: %v", err)
	}
	if err := DecodeReply([]byte(`hello`), &who); !errors.Is(err, ErrInternal) {
		t.Errorf("garbage: %v", err)
	}
	// An error without a code is still an error.
	if err := DecodeReply([]byte(`{"v":1,"error":{"message":"x"}}`), nil); !errors.Is(err, ErrInternal) {
		t.Errorf("codeless error: %v", err)
	}
}
