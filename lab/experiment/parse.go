package experiment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/internal/yamlstrict"
)

// LoadExperiment reads and validates an experiment file.
func LoadExperiment(path string) (*Experiment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("experiment: %w", err)
	}
	e, err := ParseExperiment(b)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", path, err)
	}
	return e, nil
}

// ParseExperiment decodes YAML strictly, fills defaults and validates.
// Unknown fields, a second YAML document and a fraction in an integer
// field (nodes.count: 2.9) are errors (yamlstrict.Decode). Errors name the
// line.
func ParseExperiment(b []byte) (*Experiment, error) {
	e := &Experiment{}
	root, err := yamlstrict.Decode(b, e)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	e.lines = map[string]int{}
	if len(root.Content) > 0 {
		indexLines(root.Content[0], "", e.lines)
	}
	if err := e.Normalize(); err != nil {
		return nil, err
	}
	return e, nil
}

// gatewayErrPath maps a gateway config error to the experiment field that
// most likely caused it.
func gatewayErrPath(err error) string {
	var ce *gateway.ConfigError
	if errors.As(err, &ce) {
		switch {
		case strings.HasPrefix(ce.Field, "classes."), ce.Field == "token_budget":
			return "gateway.limits"
		case strings.HasPrefix(ce.Field, "guard."):
			return "gateway.guard"
		case strings.HasPrefix(ce.Field, "defenses."):
			return "gateway.defenses"
		}
	}
	return "gateway.config"
}

// indexLines records the line of every mapping key and sequence item under
// n, keyed by dotted path ("stages.2.target").
func indexLines(n *yaml.Node, prefix string, out map[string]int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(prefix, n.Content[i].Value)
			out[p] = n.Content[i].Line
			indexLines(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := join(prefix, fmt.Sprint(i))
			out[p] = c.Line
			indexLines(c, p, out)
		}
	}
}

func join(prefix, k string) string {
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// errAt formats a validation error for the field at path, with its line
// when the experiment came from a file (the nearest known ancestor's line).
func (e *Experiment) errAt(path, format string, args ...any) error {
	return e.errAtNamed(path, path, format, args...)
}

// errAtNamed is errAt showing the field as name (its path and more).
func (e *Experiment) errAtNamed(path, name, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	for p := path; p != ""; {
		if l, ok := e.lines[p]; ok {
			return fmt.Errorf("line %d: %s: %s", l, name, msg)
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return fmt.Errorf("%s: %s", name, msg)
}
