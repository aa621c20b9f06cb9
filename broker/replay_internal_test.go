package broker

import (
	"errors"
	"testing"

	"github.com/strata-hpc/strata/api"
)

// TestKeepReply: a repeated attempt of a change is answered with the
// first attempt's reply only when that reply was the broker's lasting
// answer. Replies that say no answer came, or that the change could not
// be taken for now (the user's request limits, the store's disk under its
// reserve), are not kept: a retry with the same key, once the cause is
// gone, must be handled afresh and make the change.
func TestKeepReply(t *testing.T) {
	tests := []struct {
		err  error
		keep bool
	}{
		{nil, true},
		{api.Errorf(api.CodeInvalidArgument, "bad"), true},
		{api.Errorf(api.CodeConflict, "taken"), true},
		{api.Errorf(api.CodeNotFound, "gone"), true},
		{errors.New("a plain error: internal"), true},
		{api.Errorf(api.CodeUnavailable, "shutting down"), false},
		{api.Errorf(api.CodeDeadlineExceeded, "no reply"), false},
		{api.Errorf(api.CodeTooManyRequests, "too many"), false},
		{api.Errorf(api.CodeResourceExhausted, "disk under its reserve"), false},
	}
	for _, tc := range tests {
		if got := keepReply(tc.err); got != tc.keep {
			t.Errorf("keepReply(%v, code %q) = %v, want %v", tc.err, api.CodeOf(tc.err), got, tc.keep)
		}
	}
}
