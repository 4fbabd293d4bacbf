package experiment

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Duration is a time.Duration written as Go duration text ("30s", "1m30s")
// in YAML and JSON. The word "forever" decodes to Forever, which only the
// experiment's duration accepts.
type Duration time.Duration

// Forever is the Duration of an experiment that runs until it is stopped.
const Forever Duration = -1

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d as Go duration text, or "forever".
func (d Duration) String() string {
	if d == Forever {
		return "forever"
	}
	return time.Duration(d).String()
}

// parseDuration accepts Go duration text, "forever", or a bare 0.
func parseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	switch s {
	case "forever":
		return Forever, nil
	case "0":
		return 0, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want Go duration text such as 500ms, 30s, 2m)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return Duration(v), nil
}

// UnmarshalYAML decodes duration text; errors name the line.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a duration such as 30s", n.Line)
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = v
	return nil
}

// MarshalYAML writes duration text.
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

// MarshalJSON writes duration text.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads duration text.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
