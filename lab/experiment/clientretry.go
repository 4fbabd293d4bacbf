package experiment

import (
	"strings"

	"github.com/levee-lab/levee/lab/load"
)

// ClientRetrySpec is the clients' retry policy (load.RetryPolicy): what the
// load generator does when an attempt fails, as SDKs and load-test scripts
// do. The zero value never retries.
//
//	client_retry: {attempts: 3, on: [timeout, 5xx], backoff: 100ms, max_backoff: 1s}
//	client_retry: {attempts: 3, backoff: 100ms, budget: 0.1}   # retries ≤ 10 % of requests
type ClientRetrySpec struct {
	Attempts           int      `yaml:"attempts" json:"attempts,omitempty"` // per request, the first included
	On                 []string `yaml:"on" json:"on,omitempty"`             // timeout, 5xx, 429, error; default timeout and 5xx
	Backoff            Duration `yaml:"backoff" json:"backoff,omitempty"`
	MaxBackoff         Duration `yaml:"max_backoff" json:"max_backoff,omitempty"`
	Budget             float64  `yaml:"budget" json:"budget,omitempty"`
	BudgetMinPerSecond float64  `yaml:"budget_min_per_second" json:"budget_min_per_second,omitempty"`
}

// Policy is the load generator's form of s.
func (s ClientRetrySpec) Policy() load.RetryPolicy {
	return load.RetryPolicy{
		Attempts: s.Attempts, On: append([]string(nil), s.On...),
		Backoff: s.Backoff.D(), MaxBackoff: s.MaxBackoff.D(),
		Budget: s.Budget, BudgetMinPerSecond: s.BudgetMinPerSecond,
	}
}

// validateClientRetry checks client_retry as the generator would.
func (e *Experiment) validateClientRetry(p *problems) {
	s := e.ClientRetry
	if s.Backoff == Forever || s.MaxBackoff == Forever {
		p.add("client_retry", "forever is not a backoff")
		return
	}
	if err := s.Policy().Validate(); err != nil {
		field, msg, _ := strings.Cut(strings.TrimPrefix(err.Error(), "load: retry."), ": ")
		p.add("client_retry."+field, "%s", msg)
	}
}
