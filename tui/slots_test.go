package tui

import (
	"testing"

	"github.com/levee-lab/levee/lab/runfiles"
)

// The limit chart shows the true slot count beside the limit: the slots the
// live nodes report, so a node lost (or cut to fewer slots) lowers it.
func TestLimitChartShowsLiveSlots(t *testing.T) {
	var slots *seriesDef
	for i := range panels {
		if panels[i].id != "queue" {
			continue
		}
		for j := range panels[i].series {
			if panels[i].series[j].name == "slots" {
				slots = &panels[i].series[j]
			}
		}
	}
	if slots == nil {
		t.Fatal("the queue · limit panel has no slots series")
	}
	s := runfiles.Sample{ConcurrencyLimit: 40, Nodes: []runfiles.NodeSample{
		{Up: true, Slots: 16}, {Up: false, Slots: 16}, {Up: true, Slots: 4},
	}}
	if v, ok := slots.get(&s); !ok || v != 20 {
		t.Errorf("slots = %v, %v; want 20 (16 + 4 live, the node down left out)", v, ok)
	}
	// The nodes are scraped by the lab, not the gateway: a stale gateway
	// scrape does not hide them.
	s.GatewayStale = true
	if v, ok := slots.get(&s); !ok || v != 20 {
		t.Errorf("stale gateway: slots = %v, %v; want 20", v, ok)
	}
}

// The capacity line is measured or absent: a tick whose capacity is partly
// a node's configured service time (capacity_configured_rps) is a gap.
func TestCapacityShownOnlyWhenMeasured(t *testing.T) {
	var capacity *seriesDef
	for i := range panels {
		for j := range panels[i].series {
			if panels[i].id == "rps" && panels[i].series[j].name == "capacity" {
				capacity = &panels[i].series[j]
			}
		}
	}
	if capacity == nil {
		t.Fatal("the req/s panel has no capacity series")
	}
	s := runfiles.Sample{CapacityRPS: 64}
	if v, ok := capacity.get(&s); !ok || v != 64 {
		t.Errorf("measured: capacity = %v, %v; want 64", v, ok)
	}
	s.CapacityConfiguredRPS = 16
	if _, ok := capacity.get(&s); ok {
		t.Error("a capacity partly configured is drawn as measured")
	}
}
