package api

import "slices"

// HeaderRequestKey is the request header that carries the idempotency key
// of a change: a client sends every attempt of one change with the same
// key, and the broker answers a repeated key with the first attempt's
// reply instead of making the change again. The broker scopes keys by the
// sender (the user token of the subject), the instance and the operation,
// so one user's keys never meet another's.
const HeaderRequestKey = "Strata-Request-Key"

// changeOps are the operations that change state. A client sends them with
// a HeaderRequestKey; every other operation reads, and may be sent again
// as it is.
var changeOps = map[string]bool{
	OpSubmit: true, OpCancel: true, OpUpdate: true, OpRequeue: true,
	OpUserAdd: true, OpUserDel: true, OpUserRevoke: true,
	OpResvCreate: true, OpResvDelete: true, OpResvDeleteSeries: true, OpResvUpdate: true,
	OpQPUSubmit: true, OpQPUCancel: true, OpQPUMaint: true, OpQPURevoke: true,
}

// IsChange reports whether op changes state (see HeaderRequestKey).
func IsChange(op string) bool { return changeOps[op] }

// ChangeOps returns the operations that change state, sorted.
func ChangeOps() []string {
	ops := make([]string, 0, len(changeOps))
	for op := range changeOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// Retryable reports whether a request that failed with code may be sent
// again: no answer came (unavailable: the broker or its server is
// unreachable, starting or failing over; deadline_exceeded: no reply in
// time). Every other code is the broker's answer, which a retry would only
// repeat.
func Retryable(code Code) bool { return code == CodeUnavailable || code == CodeDeadlineExceeded }
