package textwrap

import (
	"reflect"
	"testing"
)

func TestLines(t *testing.T) {
	tests := []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 80, []string{"short"}},
		{"no width at all", 0, []string{"no width at all"}},
		{"one two three four", 9, []string{"one two", "three", "four"}},
		{"set -g default-terminal tmux-256color", 20, []string{"set -g", "default-terminal", "tmux-256color"}},
		{"a verylongwordindeed b", 5, []string{"a", "verylongwordindeed", "b"}},
		{"80×24 · 160×48 ok", 8, []string{"80×24 ·", "160×48", "ok"}},
		{"  spaces   collapse  when wrapped ", 10, []string{"spaces", "collapse", "when", "wrapped"}},
		// Never no line: levee doctor prints lines[0] after its label.
		{"            ", 5, []string{""}},
	}
	for _, tt := range tests {
		if got := Lines(tt.s, tt.width); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Lines(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
