package sampler

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/levee-lab/levee/lab/load"
	"github.com/levee-lab/levee/lab/scrape"
)

// FuzzScrapeToSample: two ticks of any /metrics text from a gateway and a
// node, read as the lab reads a scrape (scrape.Parse, then
// DropNonFinite against the same process's previous scrape), give
// samples that write as JSON (samples.jsonl holds no NaN or ±Inf) and
// never panic. Text that does not parse is a missing scrape.
func FuzzScrapeToSample(f *testing.F) {
	gw, err := os.ReadFile("../scrape/testdata/gateway.prom")
	if err != nil {
		f.Fatal(err)
	}
	gwLater, err := os.ReadFile("../scrape/testdata/gateway_later.prom")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gw, gwLater, []byte(fmt.Sprintf(nodeText, 50)), []byte(fmt.Sprintf(nodeText, 70)))
	f.Add([]byte(fmt.Sprintf(gatewayText, 100, 1)), []byte(fmt.Sprintf(gatewayText, 140, 2)), []byte(fmt.Sprintf(nodeText, 1)), []byte(fmt.Sprintf(nodeText, 2)))
	f.Add([]byte("# TYPE levee_inflight gauge\nlevee_inflight{class=\"ai\"} NaN\n"), []byte("# TYPE levee_inflight gauge\nlevee_inflight{class=\"ai\"} 1e308\nlevee_inflight{class=\"agent\"} 1e308\n"), []byte(nil), []byte(nil))
	t0 := time.Unix(100, 0)
	tick := 250 * time.Millisecond
	parse := func(b []byte, prev scrape.Families) scrape.Families {
		if len(b) == 0 {
			return nil
		}
		fam, err := scrape.Parse(bytes.NewReader(b))
		if err != nil {
			return nil
		}
		fam.DropNonFinite(prev)
		return fam
	}
	f.Fuzz(func(t *testing.T, gw1, gw2, node1, node2 []byte) {
		g1, n1 := parse(gw1, nil), parse(node1, nil)
		g2, n2 := parse(gw2, g1), parse(node2, n1)
		st := NewState(1, 1)
		for i, sc := range [][2]scrape.Families{{g1, n1}, {g2, n2}} {
			at := t0.Add(time.Duration(i+1) * time.Second)
			in := Input{
				Now: at, Start: t0, Tick: tick,
				Window:   load.Window{Duration: tick, Offered: 10, OfferedTotal: 10 * uint64(i+1)},
				Gateways: []Child{{Scrape: sc[0], At: at, Starts: 1, Up: true}},
				Nodes:    []Child{{Scrape: sc[1], At: at, Starts: 1, Up: true, Addr: "n0"}},
				Defenses: map[string]bool{"guard": true},
			}
			var out Output
			out, st = Next(st, in)
			if _, err := json.Marshal(out.Sample); err != nil {
				t.Fatalf("tick %d: the sample does not write to samples.jsonl: %v", i+1, err)
			}
		}
	})
}
