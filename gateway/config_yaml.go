package gateway

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/levee-lab/levee/internal/yamlstrict"
)

// ConfigError is an invalid configuration value or YAML syntax error.
// Line is 1-based (0 when unknown); Field is the dotted path of the key
// ("classes.ai.limit", "ratelimit.rules[1].burst").
type ConfigError struct {
	File  string
	Line  int
	Field string
	Msg   string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		b.WriteString(strconv.Itoa(e.Line))
		b.WriteByte(':')
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// LoadConfig reads and parses the YAML config file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("gateway config: %w", err)
	}
	cfg, err := ParseConfig(data)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = path
	}
	return cfg, err
}

// ParseConfig decodes YAML over DefaultConfig and validates the result.
// Unknown keys, type mismatches, a second YAML document, a fraction in an
// integer field (yamlstrict.Decode) and invalid values are *ConfigError
// values carrying the offending line. An empty document yields the
// defaults, which fail validation for want of upstream nodes.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	if _, err := yamlstrict.Decode(data, &cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, yamlError(err)
	}
	headers, err := expandHeaderEnv(cfg.Upstream.Headers, os.LookupEnv)
	if err != nil {
		return Config{}, withLine(err, data)
	}
	cfg.Upstream.Headers = headers
	if err := cfg.Validate(); err != nil {
		return Config{}, withLine(err, data)
	}
	return cfg, nil
}

// withLine sets the line of a *ConfigError naming a field to that field's
// line in data, and returns err.
func withLine(err error, data []byte) error {
	var ce *ConfigError
	if errors.As(err, &ce) && ce.Field != "" {
		var root yaml.Node
		if yaml.Unmarshal(data, &root) == nil {
			ce.Line = lineOf(&root, ce.Field)
		}
	}
	return err
}

// yamlError turns yaml.v3's errors ("yaml: line 3: …", TypeError lists)
// and yamlstrict's into a *ConfigError with the first line it names.
func yamlError(err error) error {
	var se *yamlstrict.Error
	if errors.As(err, &se) {
		return &ConfigError{Line: se.Line, Field: se.IndexedPath(), Msg: se.Msg}
	}
	msg := err.Error()
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	line := 0
	if strings.HasPrefix(msg, "line ") {
		rest := msg[len("line "):]
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line = n
				msg = strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &ConfigError{Line: line, Msg: msg}
}

// lineOf finds the line of the key at a dotted path ("a.b[2].c") in a
// document node; when the exact key is absent (a default was invalid or
// the value came from elsewhere) it returns the line of the deepest
// ancestor present, or 0.
func lineOf(doc *yaml.Node, path string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := 0
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 && strings.HasSuffix(part, "]") {
			name = part[:i]
			if v, err := strconv.Atoi(part[i+1 : len(part)-1]); err == nil {
				idx = v
			}
		}
		if n.Kind != yaml.MappingNode {
			return line
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				line = n.Content[i].Line
				next = n.Content[i+1]
				break
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}
