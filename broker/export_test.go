package broker

// QPUWaitingPulls returns how many executors' pulls wait on backend.
func (r *Runtime) QPUWaitingPulls(backend string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.qp.pulls[backend])
}
