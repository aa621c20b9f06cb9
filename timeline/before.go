package timeline

// EarliestFitBefore is EarliestFit restricted to starts before limit: it
// returns the earliest start in [notBefore, limit) at which req fits for d
// seconds, with the nodes Fits would choose there, or ok false when there is
// none (or the request is invalid, for any reason EarliestFit lists). It
// stops as soon as the candidate start reaches limit, so asking "can this
// planned job move earlier than its planned start?" costs little when the
// answer is no: the count dimensions rule most candidates out before any
// node-level check. Not safe for concurrent use (see Timeline).
func (t *Timeline) EarliestFitBefore(req Request, notBefore Time, d Duration, limit Time) (Time, NodeSet, bool) {
	p, err := t.plan(req)
	if err != nil || t.checkDuration(notBefore, d) != nil {
		return 0, NodeSet{}, false
	}
	return t.search(p, notBefore, d, limit)
}
