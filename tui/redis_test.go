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

// At 80 columns the Redis state and the decisions the gateways make
// without it (the fail-open fallback lesson 06 is about) are in the
// header. They came after the defenses and were cut: "… RL BULK BRK redis
// server ✕ dow…", the fallback rate never shown at that size.
func TestHeaderRedisAt80(t *testing.T) {
	f := newFake()
	f.redis = lab.RedisStatus{Kind: "server", Addr: "127.0.0.1:36089", Nodes: 1, Up: 0}
	m := New(f)
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	s := fixedSamples()[10]
	s.TargetRPS, s.OfferedRPS, s.RedisFallbackRPS = 2100, 2095, 487
	m.Update(sampleMsg(s))
	head := strings.SplitN(ansi.Strip(m.View()), "\n", 2)[0]
	if !strings.Contains(head, "redis ✕ down local 487/s") {
		t.Errorf("header %q lacks the Redis state and fallback rate", head)
	}
}
