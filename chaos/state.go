package chaos

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// expiryTimeout bounds the revert a fault runs on its own when its duration
// ends (for example restarting a killed node).
const expiryTimeout = 30 * time.Second

// state is the applied state every fault embeds. mu serializes Apply,
// Revert and expiry of one fault, which may take seconds (a node restart
// waits for readiness); gen is guarded by mu. The readers (Active, Detail)
// never wait for mu: active is written under mu and read atomically, and
// expiryErr has its own lock.
type state struct {
	mu     sync.Mutex
	active atomic.Bool
	gen    uint64 // bumped at every apply and revert, so a stale expiry does nothing

	errMu     sync.Mutex
	expiryErr error // guarded by errMu: the last self-revert failure, shown in Detail
}

// Active reports whether the fault is applied. It never blocks, even while
// an Apply or Revert is under way.
func (s *state) Active() bool { return s.active.Load() }

func (s *state) setExpiryErr(err error) {
	s.errMu.Lock()
	s.expiryErr = err
	s.errMu.Unlock()
}

// apply runs do unless already active; do gets the new generation for
// scheduling an expiry.
func (s *state) apply(do func(gen uint64) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active.Load() {
		return nil
	}
	if err := do(s.gen + 1); err != nil {
		return err
	}
	s.gen++
	s.active.Store(true)
	s.setExpiryErr(nil)
	return nil
}

// revert runs undo if active. When undo fails the fault stays active, so a
// later Revert can try again.
func (s *state) revert(undo func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active.Load() {
		return nil
	}
	if err := undo(); err != nil {
		return err
	}
	s.gen++
	s.active.Store(false)
	s.setExpiryErr(nil)
	return nil
}

// expireAfter makes env run undo after d, if the fault is still active in
// generation gen by then.
func (s *state) expireAfter(env Env, d time.Duration, gen uint64, undo func(ctx context.Context) error) {
	env.After(d, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.active.Load() || s.gen != gen {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), expiryTimeout)
		defer cancel()
		if err := undo(ctx); err != nil {
			s.setExpiryErr(err)
			return
		}
		s.gen++
		s.active.Store(false)
		s.setExpiryErr(nil)
	})
}

func (s *state) errSuffix() string {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	if s.expiryErr != nil {
		return " (revert failed: " + s.expiryErr.Error() + ")"
	}
	return ""
}
