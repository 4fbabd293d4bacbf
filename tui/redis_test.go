package tui

import (
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/ansi"

	"github.com/levee-lab/levee/lab"
)

// The header says which Redis the gateways share limits through, whether
// its processes are up, and nothing without one.
func TestHeaderShowsRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		redis lab.RedisStatus
		want  []string
		not   string
	}{
		{"off", lab.RedisStatus{Kind: "off"}, nil, "redis"},
		{"embedded up", lab.RedisStatus{Kind: "embedded", Addr: "127.0.0.1:6390", Nodes: 1, Up: 1}, []string{"redis embedded 127.0.0.1:6390 ●"}, "down"},
		{"server killed", lab.RedisStatus{Kind: "server", Addr: "127.0.0.1:6391", Nodes: 1, Up: 0}, []string{"redis server", "✕ down"}, ""},
		{"cluster with a master down", lab.RedisStatus{Kind: "cluster", Addr: "127.0.0.1:7000", Nodes: 6, Up: 5}, []string{"redis cluster", "5/6 up"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake()
			f.redis = tc.redis
			m := New(f)
			m.Update(tea.WindowSizeMsg{Width: 160, Height: 48})
			m.refreshControls()
			head := strings.SplitN(ansi.Strip(m.View()), "\n", 2)[0]
			for _, w := range tc.want {
				if !strings.Contains(head, w) {
					t.Errorf("header %q lacks %q", head, w)
				}
			}
			if tc.not != "" && strings.Contains(head, tc.not) {
				t.Errorf("header %q shows %q", head, tc.not)
			}
		})
	}
}
