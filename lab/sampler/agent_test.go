package sampler

import (
	"fmt"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/load"
)

const agentGatewayText = `# TYPE levee_agent_tasks_total counter
levee_agent_tasks_total{result="ok",level="green"} %d
levee_agent_tasks_total{result="degraded",level="yellow"} %d
levee_agent_tasks_total{result="dropped",level="red"} %d
# TYPE levee_agent_level gauge
levee_agent_level %d
`

// TestAgentSample: the agent view takes the client's answered share over
// the recent window, the worst gateway's agent level, and each gateway's
// task counts once per new scrape (a tick without one adds nothing).
func TestAgentSample(t *testing.T) {
	t0 := time.Unix(1000, 0)
	st := NewState(2, 0)
	in := func(i int, scrapes [2]string, fresh bool) Input {
		var gws []Child
		for _, text := range scrapes {
			at := t0.Add(time.Duration(i) * 250 * time.Millisecond)
			if !fresh {
				at = t0 // the scrape of the first tick, again
			}
			gws = append(gws, Child{Scrape: families(t, text), At: at, Starts: 1, Up: true})
		}
		return Input{
			Now: t0.Add(time.Duration(i) * 250 * time.Millisecond), Start: t0, Tick: 250 * time.Millisecond,
			Window: load.Window{Duration: 250 * time.Millisecond, ByRoute: map[string]load.RouteWindow{
				string(load.RouteAgent): {Offered: 4, Finished: 4, Answered: 3, OfferedTotal: uint64(4 * (i + 1)), AnsweredTotal: uint64(3 * (i + 1))},
			}},
			Gateways: gws,
		}
	}
	out, st := Next(st, in(0, [2]string{fmt.Sprintf(agentGatewayText, 5, 0, 0, 0), fmt.Sprintf(agentGatewayText, 1, 2, 0, 1)}, true))
	a := out.Sample.Agent
	if a == nil || a.Level != "yellow" || a.SuccessRate != 0.75 || a.TasksByLevel["green"] != 6 || a.TasksByLevel["yellow"] != 2 || a.TasksByResult["degraded"] != 2 {
		t.Fatalf("first tick: %+v", a)
	}
	out, st = Next(st, in(1, [2]string{fmt.Sprintf(agentGatewayText, 5, 0, 1, 2), fmt.Sprintf(agentGatewayText, 1, 2, 0, 1)}, true))
	if a := out.Sample.Agent; a.Level != "red" || a.TasksByLevel["red"] != 1 || a.TasksByLevel["green"] != 0 || a.OfferedTotal != 8 {
		t.Fatalf("second tick: %+v", a)
	}
	stale := in(2, [2]string{fmt.Sprintf(agentGatewayText, 5, 0, 1, 2), fmt.Sprintf(agentGatewayText, 1, 2, 0, 1)}, false)
	if out, _ = Next(st, stale); len(out.Sample.Agent.TasksByLevel) != 0 {
		t.Fatalf("a tick without a new scrape counted tasks again: %+v", out.Sample.Agent)
	}
	if out, _ := Next(NewState(1, 0), Input{Now: t0, Start: t0, Tick: time.Second}); out.Sample.Agent != nil {
		t.Fatalf("no agent traffic, yet an agent view: %+v", out.Sample.Agent)
	}
}
