// Package wiretest checks, in tests, that a server's /metrics answer keeps
// the contract of package wire: Prometheus conventions (client_golang's
// promlint) and exactly the metrics of wire's catalogue.
package wiretest

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/levee-lab/levee/internal/wire"
)

// CheckMetrics reports, as test errors: every promlint problem of body (a
// Prometheus text exposition); every metric of want that body does not
// serve, or serves with another type or other label names; and every
// levee_ metric body serves that is neither in want nor in optional.
func CheckMetrics(t testing.TB, body []byte, want []wire.Metric, optional ...wire.Metric) {
	t.Helper()
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	known := map[string]bool{}
	for _, m := range optional {
		known[m.Name] = true
	}
	for _, m := range want {
		known[m.Name] = true
		f, ok := fams[m.Name]
		if !ok {
			t.Errorf("%s: not served", m.Name)
			continue
		}
		if got := strings.ToLower(f.GetType().String()); got != m.Type {
			t.Errorf("%s: type %s, want %s", m.Name, got, m.Type)
		}
		wantLabels := slices.Sorted(slices.Values(m.Labels))
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if slices.Sort(labels); !slices.Equal(labels, wantLabels) {
				t.Errorf("%s: labels %v, want %v", m.Name, labels, wantLabels)
				break
			}
		}
	}
	for name := range fams {
		if strings.HasPrefix(name, "levee_") && !known[name] {
			t.Errorf("%s is served but not in wire's catalogue", name)
		}
	}
}

// CheckServer fetches base + wire.PathMetrics (base is "http://host:port")
// and checks the answer with CheckMetrics.
func CheckServer(t testing.TB, base string, want []wire.Metric, optional ...wire.Metric) {
	t.Helper()
	resp, err := http.Get(base + wire.PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s: %s %v", base, wire.PathMetrics, resp.Status, err)
	}
	CheckMetrics(t, body, want, optional...)
}
