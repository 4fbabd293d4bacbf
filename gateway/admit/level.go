package admit

import (
	"fmt"

	"github.com/levee-lab/levee/internal/wire"
)

// Level is the gateway's overload level. Each level admits less: Green
// admits everything, Yellow sheds P2 (a share of it, or all: see
// ShedShare), Red every P2 and some or all P1, Black some or all P0 too
// (the gateway answers with fallbacks). Forced (admin API), a level
// admits as Admits says.
type Level int32

// The levels, in increasing severity.
const (
	Green Level = iota
	Yellow
	Red
	Black
)

// NumLevels is the number of levels.
const NumLevels = wire.NumLevels

// String returns the wire name ("green", "yellow", "red", "black"), or
// "level(n)" for an invalid value.
func (l Level) String() string {
	if l.Valid() {
		return wire.LevelName(int(l))
	}
	return fmt.Sprintf("level(%d)", int32(l))
}

// Valid reports whether l is one of the four levels.
func (l Level) Valid() bool { return l >= Green && l <= Black }

// Admits reports whether a request of priority p passes at level l when
// the level is forced: Yellow sheds all P2, Red admits only P0, Black
// nothing.
func (l Level) Admits(p Priority) bool {
	switch l {
	case Green:
		return p.Valid()
	case Yellow:
		return p <= P1
	case Red:
		return p == P0
	}
	return false
}

// ParseLevel parses a wire level name ("green", "yellow", "red" or
// "black"), in any case.
func ParseLevel(s string) (Level, error) {
	if i, ok := wire.LevelIndex(s); ok {
		return Level(i), nil
	}
	return 0, fmt.Errorf("admit: level %q, want green, yellow, red or black", s)
}

// MarshalText implements encoding.TextMarshaler.
func (l Level) MarshalText() ([]byte, error) {
	if !l.Valid() {
		return nil, fmt.Errorf("admit: invalid level %d", int32(l))
	}
	return []byte(l.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := ParseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}
