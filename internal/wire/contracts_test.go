package wire

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/CONTRACTS.md")

const contractsPath = "../../docs/CONTRACTS.md"

// TestContractsDoc checks that every generated block of docs/CONTRACTS.md
// (between <!-- wire:NAME --> and <!-- /wire:NAME -->) is what the
// generator NAME makes of this package, and that every generator has its
// block. With -update it rewrites the blocks instead.
func TestContractsDoc(t *testing.T) {
	doc, err := os.ReadFile(contractsPath)
	if err != nil {
		t.Fatal(err)
	}
	out, used, err := fillBlocks(string(doc), docBlocks)
	if err != nil {
		t.Fatal(err)
	}
	for name := range docBlocks {
		if !used[name] {
			t.Errorf("%s has no <!-- wire:%s --> block", contractsPath, name)
		}
	}
	if out == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(contractsPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s is out of date with package wire; run go test ./internal/wire -update and review the diff:\n%s",
		contractsPath, firstDiff(string(doc), out))
}

// fillBlocks replaces the body of every marked block of doc with its
// generator's output and reports which generators it used.
func fillBlocks(doc string, gens map[string]func() string) (string, map[string]bool, error) {
	const open = "<!-- wire:"
	var b strings.Builder
	used := map[string]bool{}
	for {
		i := strings.Index(doc, open)
		if i < 0 {
			b.WriteString(doc)
			return b.String(), used, nil
		}
		head := doc[i:]
		end := strings.Index(head, "-->")
		if end < 0 {
			return "", nil, fmt.Errorf("unclosed marker at %q", head[:min(len(head), 40)])
		}
		name, _, _ := strings.Cut(strings.TrimSpace(head[len(open):end]), " ")
		gen, ok := gens[name]
		if !ok {
			return "", nil, fmt.Errorf("no generator for block %q", name)
		}
		stop := "<!-- /wire:" + name + " -->"
		j := strings.Index(head, stop)
		if j < 0 {
			return "", nil, fmt.Errorf("block %q has no end marker %s", name, stop)
		}
		b.WriteString(doc[:i])
		b.WriteString(head[:end+len("-->")])
		b.WriteString("\n")
		b.WriteString(gen())
		b.WriteString(stop)
		doc = head[j+len(stop):]
		used[name] = true
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  doc:  %s\n  wire: %s", i+1, x, y)
		}
	}
	return ""
}

// docBlocks are the generators of docs/CONTRACTS.md's generated blocks.
var docBlocks = map[string]func() string{
	"ready":             docReady,
	"outcomes":          docOutcomes,
	"headers":           docHeaders,
	"error-codes":       docErrorCodes,
	"names":             docNames,
	"defenses":          docDefenses,
	"gateway-metrics":   docGatewayMetrics,
	"fakemodel-metrics": docFakeModelMetrics,
	"knobs":             docKnobs,
}

func docReady() string {
	gw := Ready{Kind: KindGateway, Listen: "127.0.0.1:41234", Admin: "127.0.0.1:41235", PID: 123}
	fm := Ready{Kind: KindFakeModel, Listen: "127.0.0.1:9001", Admin: "127.0.0.1:9001", PID: 124, Nodes: []string{"127.0.0.1:9001", "127.0.0.1:9002"}}
	rd := Ready{Kind: KindRedis, Listen: "127.0.0.1:41236", PID: 125}
	return fmt.Sprintf("```\n%s\n%s\n%s\n```\n", gw.Line(), fm.Line(), rd.Line())
}

// outcomeHTTP is what the client sees of each outcome.
var outcomeHTTP = map[Outcome]string{
	OutcomeOK:               "200 with a real model answer",
	OutcomeFallback:         "200, body has `\"" + FieldFallback + "\":true`, header `" + HeaderFallback + ": true`",
	OutcomeShedRateLimit:    "429 + `Retry-After`",
	OutcomeShedOverload:     "429 (P2 in yellow) or 503 (red), + `Retry-After`",
	OutcomeShedQueueFull:    "503 + `Retry-After`",
	OutcomeShedQueueTimeout: "503 + `Retry-After`",
	OutcomeShedBudget:       "503 + `Retry-After`",
	OutcomeTimeout:          "no answer within the client's deadline, or 504",
	OutcomeError:            "5xx not listed above, connection error, malformed answer",
	OutcomeGeneratorDropped: "never sent: the generator's outstanding cap was full",
}

func docOutcomes() string {
	var b strings.Builder
	b.WriteString("| outcome | HTTP seen by the client | gateway header `" + HeaderOutcome + "` |\n|---|---|---|\n")
	for _, o := range Outcomes() {
		desc, ok := outcomeHTTP[o]
		if !ok {
			desc = "**undocumented**"
		}
		header := "—"
		if o.FromServer() {
			header = "`" + o.String() + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", o, desc, header)
	}
	return b.String()
}

// docErrorCodes is the table of error codes: every Code constant, the
// answer that carries it and its cause.
func docErrorCodes() string {
	rows := []struct{ code, status, outcome, cause string }{
		{CodeRateLimitExceeded, "429", "`shed_ratelimit`", "the key's rate-limit rule has no room now; `Retry-After` is when its bucket (or window) has it"},
		{CodeRateLimitStore, "429", "`shed_ratelimit`", "the shared rate-limit store (Redis) did not answer and `fail_open` is off"},
		{CodeOverloaded, "429 (P2 in yellow) or 503", "`shed_overload`", "the overload level sheds this priority (or drops this agent task, or is black with the fallback off)"},
		{CodeQueueFull, "503", "`shed_queue_full`", "the class's bulkhead queue is full (or a more important request displaced this one)"},
		{CodeQueueTimeout, "503", "`shed_queue_timeout`", "queued for the class's `queue_timeout` without getting a slot"},
		{CodeBudgetExhausted, "503", "`shed_budget`", "the in-flight token budget (or the agent sub-call cap) has no room now; not OpenAI's `insufficient_quota` (a billing state a client should not retry), since this one passes"},
		{CodeDeadlineExceeded, "504", "`timeout`", "the request's deadline passed (reading the body, waiting for the rate-limit store, queued, waiting for the model) or cannot cover the model's minimum service time"},
		{CodeInvalidRequest, "400", "`error`", "a bad field, header or body; `param` names it when one is to blame"},
		{CodeCostExceedsLimit, "400", "`error`", "the request's estimated tokens exceed what it may ever take (per-request cap, the reserves, a token bucket's capacity): it can never pass, whatever the load"},
		{CodeRequestTooLarge, "413", "`error`", "the body is over `body_limit_bytes` (admin: 1 MiB)"},
		{CodeInvalidAPIKey, "401", "`error`", "a missing or unknown API key (`unknown_key: reject`), or a wrong admin token"},
		{CodePermissionDenied, "403", "— (admin)", "a fake model's admin API called from a peer that is not loopback (it serves loopback peers only, token or not)"},
		{CodeUnknownURL, "404", "`error`", "no such route"},
		{CodeMethodNotAllowed, "405", "`error`", "the route takes another method (`Allow` names it)"},
		{CodeUpstreamError, "502", "`error`", "the model failed (5xx), could not be reached, or answered badly, and no fallback answered (a failure or a refusal that comes as the deadline passes is `deadline_exceeded`)"},
		{CodeUnavailable, "503", "— (admin)", "an admin change that cannot apply now"},
		{CodeInternalError, "500", "`error`", "a bug: a handler panicked and was recovered"},
	}
	var b strings.Builder
	b.WriteString("| `code` | status | outcome | cause |\n|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.code, r.status, r.outcome, r.cause)
	}
	return b.String()
}

func docHeaders() string {
	rows := []struct{ name, doc string }{
		{HeaderOutcome, "answer: the gateway's outcome (a stream sends `ok` before it begins)"},
		{HeaderOutcomeFinal, "trailer of a streamed answer: its outcome once it ended; overrides `" + HeaderOutcome + "`"},
		{HeaderFallback, "answer: `true` on a fallback"},
		{HeaderDeadlineMs, "request: the client's remaining deadline, whole milliseconds above 0 (anything else is a 400 naming the header); the route's timeout caps it; the gateway passes what remains upstream"},
		{HeaderRequestTimeoutMs, "request: alias of `" + HeaderDeadlineMs + "` the gateway honours; `" + HeaderDeadlineMs + "` wins when both are sent"},
		{HeaderNode, "fake model answer: the node's address"},
		{HeaderBackpressure, "model node answer: present while the node is past a backpressure watermark; its reasons (`" + BackpressureQueue + "`, `" + BackpressureHeap + "`, `" + BackpressureCPU + "`, `" + BackpressureForce + "`), comma-separated"},
		{HeaderAttempt, "request from the load generator: the attempt number, 1 for the first (a retry sends 2, 3, …)"},
	}
	var b strings.Builder
	b.WriteString("| header | meaning |\n|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| `%s` | %s |\n", r.name, r.doc)
	}
	return b.String()
}

func code(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

func docNames() string {
	p, l, r, lr, c := Priorities(), Levels(), Routes(), LoadRoutes(), Classes()
	sr := ShedReasons()
	reasons := make([]string, len(sr))
	for i, s := range sr {
		reasons[i] = s.String()
	}
	var b strings.Builder
	b.WriteString("| names | values |\n|---|---|\n")
	fmt.Fprintf(&b, "| priorities (label `%s`), most important first | %s |\n", LabelPriority, code(p[:]))
	fmt.Fprintf(&b, "| overload levels, `%s` values 0–%d | %s |\n", MetricOverloadLevel, NumLevels-1, code(l[:]))
	fmt.Fprintf(&b, "| gateway routes (label `%s`) | %s |\n", LabelRoute, code(r[:]))
	fmt.Fprintf(&b, "| route classes, one bulkhead each (label `%s`) | %s |\n", LabelClass, code(c[:]))
	fmt.Fprintf(&b, "| shed reasons (label `%s` of `%s`) | %s |\n", LabelReason, MetricShed, code(reasons))
	fmt.Fprintf(&b, "| load generator routes (`%s` and `%s` are chat and completions with `\"stream\":true`) | %s |\n", RouteChatStream, RouteCompletionsStream, code(lr[:]))
	fmt.Fprintf(&b, "| rate-limit stores (label `%s`) | %s |\n", LabelStore, code([]string{StoreLocal, StoreRedis}))
	fmt.Fprintf(&b, "| upstream breaker states, `%s` values 0–2 | %s |\n", MetricUpstreamBreakerState, code([]string{BreakerClosed, BreakerHalfOpen, BreakerOpen}))
	es := EjectionStates()
	fmt.Fprintf(&b, "| upstream ejection states, `%s` values 0–2 | %s |\n", MetricUpstreamEjectionState, code(es[:]))
	fmt.Fprintf(&b, "| upstream attempt kinds (label `%s` of `%s`) | %s |\n", LabelKind, MetricUpstreamAttempts, code([]string{AttemptFirst, AttemptRetry, AttemptHedge}))
	fmt.Fprintf(&b, "| upstream attempt failures (label `%s` of `%s`; the gateway's `upstream.retry_on` values, which also take `429`: a full node, retried but not a failure) | %s |\n", LabelReason, MetricUpstreamAttemptFailures, code([]string{AttemptFailConnect, AttemptFailStatus, AttemptFailTimeout}))
	fmt.Fprintf(&b, "| hedge results (label `%s` of `%s`) | %s |\n", LabelResult, MetricUpstreamHedges, code([]string{HedgeSent, HedgeWon, HedgeDenied}))
	fmt.Fprintf(&b, "| ejection reasons (label `%s` of `%s`) | %s |\n", LabelReason, MetricUpstreamEjections, code([]string{EjectConsecutiveFailures, EjectFailureRate, EjectLatency, EjectProbeFailed}))
	cc := CallClasses()
	fmt.Fprintf(&b, "| upstream call classes (label `%s`) | %s |\n", LabelCallClass, code(cc[:]))
	return b.String()
}

func docDefenses() string {
	parts := []string{}
	for _, n := range DefenseNames() {
		parts = append(parts, fmt.Sprintf("%q:bool", n))
	}
	return "`{" + strings.Join(parts, ",") + "}`\n"
}

func metricTable(ms []Metric) string {
	var b strings.Builder
	b.WriteString("| name | type | labels | meaning |\n|---|---|---|---|\n")
	for _, m := range ms {
		labels := "—"
		if len(m.Labels) > 0 {
			labels = code(m.Labels)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", m.Name, m.Type, labels, m.Doc)
	}
	return b.String()
}

func docGatewayMetrics() string {
	return metricTable(append(GatewayMetrics(), GatewayRedisMetrics()...)) +
		"| `" + MetricGoGoroutines + "`, `" + MetricProcessRSS + "`, … | | | standard Go and process collectors |\n"
}

func docFakeModelMetrics() string { return metricTable(FakeModelMetrics()) }

func docKnobs() string {
	var full KnobPatch
	var b strings.Builder
	b.WriteString("| knob | JSON type |\n|---|---|\n")
	for _, l := range leaves(&full) {
		typ := map[reflect.Kind]string{reflect.Float64: "number", reflect.Int: "integer", reflect.String: "string", reflect.Bool: "bool"}[l.v.Type().Elem().Kind()]
		switch l.name {
		case KnobLatency + "." + KnobDist:
			typ += ": " + code([]string{DistLognormal, DistFixed, DistUniform})
		case KnobOverflow:
			typ += ": " + code([]string{OverflowQueue, OverflowBounded, OverflowReject})
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", l.name, typ)
	}
	return b.String()
}

// TestContractsDocNamesErrorTypes: the prose of docs/CONTRACTS.md lists
// the error types an answer's `type` takes; every status an error code
// comes with (the error-codes table) maps to one of them. The list is
// prose, not a generated block, so it could miss one (it missed 403's
// permission_error).
func TestContractsDocNamesErrorTypes(t *testing.T) {
	doc, err := os.ReadFile(contractsPath)
	if err != nil {
		t.Fatal(err)
	}
	prose, _, _ := strings.Cut(string(doc), "<!-- wire:error-codes -->")
	for _, status := range []int{400, 401, 403, 404, 405, 413, 429, 500, 502, 503, 504} {
		if typ := ErrorType(status); !strings.Contains(prose, "`"+typ+"`") {
			t.Errorf("%s does not name `%s`, the error type of status %d, before its error-codes table", contractsPath, typ, status)
		}
	}
}
