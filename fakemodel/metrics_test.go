package fakemodel

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// nodeMetricsText serves one request through a node and returns its
// /metrics answer.
func nodeMetricsText(t *testing.T) []byte {
	t.Helper()
	_, url := startNode(t, fixedKnobs(5, 3, OverflowQueue))
	if code, _, err := post(context.Background(), url+wire.PathChat, chatBody); err != nil || code != 200 {
		t.Fatal(code, err)
	}
	resp, err := testClient.Get(url + wire.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMetricsLint: a node's /metrics follows Prometheus conventions
// (client_golang's promlint finds no problem).
func TestMetricsLint(t *testing.T) {
	problems, err := promlint.New(bytes.NewReader(nodeMetricsText(t))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsMatchCatalogue: a node serves exactly wire.FakeModelMetrics
// (with their types and labels) under the levee_ prefix.
func TestMetricsMatchCatalogue(t *testing.T) {
	parser := newParser()
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(nodeMetricsText(t)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, m := range wire.FakeModelMetrics() {
		want[m.Name] = true
		f, ok := fams[m.Name]
		if !ok {
			t.Errorf("%s: not served", m.Name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != m.Type {
			t.Errorf("%s: type %s, want %s", m.Name, got, m.Type)
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName())
			}
			slices.Sort(labels)
			wl := slices.Sorted(slices.Values(m.Labels))
			if !slices.Equal(labels, wl) {
				t.Errorf("%s: labels %v, want %v", m.Name, labels, wl)
				break
			}
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "levee_") && !want[name] {
			t.Errorf("%s is served but not in wire's catalogue", name)
		}
	}
}
