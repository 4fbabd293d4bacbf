package wiretest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// recorder is a testing.TB that keeps the errors instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Errorf(f string, args ...any) { r.errs = append(r.errs, fmt.Sprintf(f, args...)) }
func (r *recorder) Fatalf(f string, args ...any) { r.Errorf(f, args...); panic("fatal") }

func TestCheckMetrics(t *testing.T) {
	want := []wire.Metric{
		{Name: "levee_things_total", Type: wire.TypeCounter, Labels: []string{"kind"}, Doc: "things"},
		{Name: "levee_depth", Type: wire.TypeGauge, Doc: "depth"},
	}
	good := "# HELP levee_things_total Things.\n# TYPE levee_things_total counter\nlevee_things_total{kind=\"a\"} 1\n" +
		"# HELP levee_depth Depth.\n# TYPE levee_depth gauge\nlevee_depth 2\n"
	r := &recorder{TB: t}
	CheckMetrics(r, []byte(good), want)
	if len(r.errs) != 0 {
		t.Errorf("a conforming exposition: %v", r.errs)
	}

	bad := "# HELP levee_things_total Things.\n# TYPE levee_things_total counter\nlevee_things_total{sort=\"a\"} 1\n" +
		"# HELP levee_lag_seconds Lag.\n# TYPE levee_lag_seconds gauge\nlevee_lag_seconds{quantile=\"0.99\"} 0.1\n"
	r = &recorder{TB: t}
	CheckMetrics(r, []byte(bad), want)
	all := strings.Join(r.errs, "\n")
	for _, wantErr := range []string{`"quantile" label`, "levee_things_total: labels [sort]", "levee_depth: not served", "levee_lag_seconds is served but not in wire's catalogue"} {
		if !strings.Contains(all, wantErr) {
			t.Errorf("errors do not mention %q:\n%s", wantErr, all)
		}
	}
}
