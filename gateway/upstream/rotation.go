package upstream

// A node is in rotation while it is up (its health checks pass) and not
// ejected or on probation as an outlier. The pool reports changes of that
// count to a hook (WithRotationHook), so that a concurrency limit in front
// of the pool can follow the places the nodes in rotation hold before any
// latency shows the change.

// WithRotationHook sets f to be called each time the number of nodes in
// rotation changes, with the number before and after (either may be 0).
// Calls are serialized and come from the health loop or the request path:
// f must not block and must not call back into the Pool.
func WithRotationHook(f func(from, to int)) Option {
	return func(p *Pool) { p.onRotation = f }
}

// InRotation returns the number of nodes in rotation now.
func (p *Pool) InRotation() int {
	n := 0
	for _, nd := range p.nodes {
		if nd.up.Load() && EjectionState(nd.ejection.Load()) == InRotation {
			n++
		}
	}
	return n
}

// noteRotation calls the rotation hook if the count changed since it was
// last reported. It reads atomics only, so it may run under outliers.mu.
func (p *Pool) noteRotation() {
	if p.onRotation == nil {
		return
	}
	p.rotMu.Lock()
	defer p.rotMu.Unlock()
	if n := p.InRotation(); n != p.rotation {
		from := p.rotation
		p.rotation = n
		p.onRotation(from, n)
	}
}
