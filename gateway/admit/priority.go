// Package admit holds the gateway's admission layers after rate limiting: the
// overload Guard (green/yellow/red/black from scheduler lag, GC pauses, heap
// and gateway-supplied signals), concurrency Limiters (static, AIMD,
// gradient), the priority-queued Bulkhead, and the token cost Budget.
// Everything on the request path is non-blocking (except Bulkhead.Acquire,
// which waits by design) and allocation-free.
package admit

import (
	"fmt"
	"strings"

	"github.com/levee-lab/levee/internal/wire"
)

// Priority ranks a request: P0 is critical, P2 is background or anonymous.
// Lower values are more important.
type Priority uint8

// The priorities.
const (
	P0 Priority = 0
	P1 Priority = 1
	P2 Priority = 2
)

// NumPriorities is the number of priorities; valid values are < NumPriorities.
const NumPriorities = wire.NumPriorities

// ParsePriority parses a wire priority name ("P0".."P2"), in either case,
// or its rank ("0".."2").
func ParsePriority(s string) (Priority, error) {
	if i, ok := wire.PriorityIndex(strings.ToUpper(s)); ok {
		return Priority(i), nil
	}
	if len(s) == 1 && s[0] >= '0' && s[0] < '0'+NumPriorities {
		return Priority(s[0] - '0'), nil
	}
	return 0, fmt.Errorf("admit: priority %q, want P0, P1 or P2", s)
}

// String returns the wire name ("P0", "P1", "P2"), or "P?(n)" for an
// invalid value.
func (p Priority) String() string {
	if p.Valid() {
		return wire.Priorities()[p]
	}
	return fmt.Sprintf("P?(%d)", uint8(p))
}

// Valid reports whether p is P0, P1 or P2.
func (p Priority) Valid() bool { return p < NumPriorities }

// MarshalText implements encoding.TextMarshaler ("P0".."P2").
func (p Priority) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("admit: invalid priority %d", uint8(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler (what ParsePriority accepts).
func (p *Priority) UnmarshalText(b []byte) error {
	v, err := ParsePriority(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}
