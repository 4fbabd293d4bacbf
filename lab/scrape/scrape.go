package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxBody bounds how much of a /metrics answer is read.
const MaxBody = 32 << 20

// Families is one scrape: metric families by name. A nil Families is an
// empty scrape; every helper accepts it.
type Families map[string]*dto.MetricFamily

// Scrape GETs url with c and parses the Prometheus text answer. A status
// other than 200, a transport error or a parse error is returned wrapped,
// naming the URL.
func Scrape(ctx context.Context, c *http.Client, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("scrape %s: status %s", url, resp.Status)
	}
	f, err := Parse(io.LimitReader(resp.Body, MaxBody))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return f, nil
}

// Parse parses Prometheus text exposition format (names validated as UTF-8,
// as Prometheus 3 does).
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return Families(m), nil
}
