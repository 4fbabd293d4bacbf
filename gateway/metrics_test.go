package gateway

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsText serves a few requests through a gateway and returns its
// /metrics answer.
func metricsText(t *testing.T) []byte {
	t.Helper()
	m := newFakeModel(t, 4, 0)
	s := startServer(t, testConfig(m.addr()))
	base := "http://" + s.Addr()
	for _, r := range []struct{ method, path, body string }{
		{"POST", wire.PathPredict, predictBody}, {"POST", wire.PathChat, chatBody}, {"GET", wire.PathStandard + "ping", ""},
	} {
		if a := call(t, r.method, base+r.path, "k0", r.body); a.err != nil || a.status != 200 {
			t.Fatalf("%s %s: %v", r.method, r.path, a)
		}
	}
	resp, err := testClient.Get(base + wire.PathMetrics)
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

// TestMetricsLint: the gateway's /metrics follows Prometheus conventions
// (client_golang's promlint finds no problem).
func TestMetricsLint(t *testing.T) {
	problems, err := promlint.New(bytes.NewReader(metricsText(t))).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// TestMetricsMatchCatalogue: every metric of wire.GatewayMetrics is served
// with its type and labels, and every levee_ metric served is in the
// catalogue.
func TestMetricsMatchCatalogue(t *testing.T) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(metricsText(t)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]wire.Metric{}
	for _, m := range append(wire.GatewayMetrics(), wire.GatewayRedisMetrics()...) {
		want[m.Name] = m
	}
	for _, m := range wire.GatewayMetrics() {
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
			if !sameSet(labels, m.Labels) {
				t.Errorf("%s: labels %v, want %v", m.Name, labels, m.Labels)
				break
			}
		}
	}
	for name := range fams {
		if _, ok := want[name]; !ok && strings.HasPrefix(name, "levee_") {
			t.Errorf("%s is served but not in wire's catalogue", name)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
