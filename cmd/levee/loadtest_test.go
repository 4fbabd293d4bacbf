package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/load"
)

// TestLoadtestSignalPrintsSummary runs the real binary with a long
// --duration and signals it: the load stops, the requests in flight drain
// and the summary prints, with the exit code of the run so far (0: the
// loopback server answered every request), instead of the process dying with
// nothing printed.
func TestLoadtestSignalPrintsSummary(t *testing.T) {
	bin := buildLevee(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "loadtest", "--rate", "200", "--duration", "60s")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 64)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			// The first line says the loopback server listens: the load
			// starts right after it.
			select {
			case l := <-lines:
				if !strings.HasPrefix(l, "loopback server on ") {
					t.Fatalf("first line %q", l)
				}
			case <-ctx.Done():
				t.Fatalf("no first line; stderr:\n%s", stderr.String())
			}
			time.Sleep(500 * time.Millisecond)
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			var out []string
			for l := range lines {
				out = append(out, l)
			}
			err = cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("still running 5 s after %v (killed); stdout:\n%s", sig, strings.Join(out, "\n"))
			}
			if err != nil {
				t.Fatalf("after %v: %v, want exit 0; stderr:\n%s", sig, err, stderr.String())
			}
			text := strings.Join(out, "\n")
			for _, want := range []string{"target 200", "outcomes: ok ", "(unaccounted 0)", "server received "} {
				if !strings.Contains(text, want) {
					t.Errorf("after %v: stdout lacks %q:\n%s", sig, want, text)
				}
			}
			if !strings.Contains(stderr.String(), "interrupted after ") {
				t.Errorf("after %v: stderr does not say it was interrupted:\n%s", sig, stderr.String())
			}
		})
	}
}

// TestLoadtestExitCode runs loadtest in-process against loopback targets:
// it exits 1 with a one-line reason when no request succeeded or when the
// generator dropped arrivals, and 0 when the target answered every request.
func TestLoadtestExitCode(t *testing.T) {
	// silent accepts connections (the kernel does, from its backlog) and
	// never answers.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	// closed is a port nothing listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	// notFound answers 404 to every request: an error whose status shows.
	notFound := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(notFound.Close)

	for _, tt := range []struct {
		name string
		args []string
		code int
		why  string // on stderr; "" means stderr is empty
		out  string // on stdout: the status or cause behind the outcomes
	}{
		{"loopback answers", []string{"--rate", "200"}, 0, "", "HTTP status: 200 60\n"},
		{"never answers, max-outstanding 1", []string{"--url", "http://" + silent.Addr().String(),
			"--rate", "1000", "--max-outstanding", "1", "--timeout", "200ms"}, 1, "no request succeeded (ok 0 of ", "no answer: client timeout "},
		{"unreachable", []string{"--url", "http://" + closed, "--rate", "200"}, 1, "no request succeeded (ok 0 of ", "no answer: connection refused 60\n"},
		{"not found", []string{"--url", notFound.URL, "--rate", "200"}, 1, "no request succeeded (ok 0 of ", "HTTP status: 404 60\n"},
		{"loopback, max-outstanding 1", []string{"--rate", "20000", "--max-outstanding", "1"}, 1, "the generator dropped ", "HTTP status: 200 "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLoadtest(append(tt.args, "--duration", "300ms"), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.out) {
				t.Errorf("stdout lacks %q:\n%s", tt.out, stdout.String())
			}
			if tt.why == "" && stderr.Len() > 0 {
				t.Errorf("stderr %q, want nothing", stderr.String())
			}
			if tt.why != "" && (!strings.Contains(stderr.String(), tt.why) || strings.Count(stderr.String(), "\n") != 1) {
				t.Errorf("stderr %q, want one line with %q", stderr.String(), tt.why)
			}
		})
	}
}

// TestLoadtestSentRate: the rate printed, and the error against the target,
// count only the requests sent, not the ones the generator dropped (the
// generator's AchievedRPS counts every arrival offered, dropped included).
func TestLoadtestSentRate(t *testing.T) {
	for _, tt := range []struct {
		name          string
		target        float64
		offered, drop uint64
		rate, err     string
	}{
		{"nothing dropped", 1000, 1000, 0, "sent 1000.0 req/s", "error 0.000 %"},
		{"most dropped", 1000, 1000, 990, "sent 10.0 req/s", "error 99.000 %"},
		{"all dropped", 1000, 1000, 1000, "sent 0.0 req/s", "error 100.000 %"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tot := load.Totals{
				Elapsed:     time.Second,
				Offered:     tt.offered,
				AchievedRPS: float64(tt.offered),
				Outcomes: map[string]uint64{
					wire.OutcomeOK.String():               tt.offered - tt.drop,
					wire.OutcomeGeneratorDropped.String(): tt.drop,
				},
				Admitted: hdrhistogram.New(1, 60_000_000, 3),
			}
			var out bytes.Buffer
			printLoadtest(&out, tt.target, tot)
			for _, want := range []string{tt.rate, tt.err} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("got:\n%s\nwant %q", out.String(), want)
				}
			}
		})
	}
}

// TestLoadtestBadFlagsStartNothing: a bad flag value is a usage error (exit
// 2) reported before the loopback server starts, so nothing is printed on
// stdout, and the one-line error names the flag as typed (it said
// "load: client_timeout" for --timeout, and --rate 0 offered nothing for the
// whole --duration, then exited 1).
func TestLoadtestBadFlagsStartNothing(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--rate", "-1"}, "--rate -1: want > 0"},
		{[]string{"--rate", "0"}, "--rate 0: want > 0"},
		{[]string{"--rate", "NaN"}, "--rate NaN: want > 0"},
		{[]string{"--rate", "2e6"}, "--rate 2e+06: want at most 1e+06 requests per second"},
		{[]string{"--rate", "+Inf"}, "--rate +Inf: want at most 1e+06 requests per second"},
		{[]string{"--arrival", "bursty"}, `--arrival "bursty": want constant or poisson`},
		{[]string{"--timeout", "0s"}, "--timeout 0s: want > 0"},
		{[]string{"--max-outstanding", "0"}, "--max-outstanding 0: want > 0"},
		{[]string{"--route", "nosuch"}, `--route "nosuch": want one of `},
		{[]string{"--url", "localhost:8080"}, `--url "localhost:8080": not an http(s) base URL such as http://127.0.0.1:8080`},
		{[]string{"--url", "127.0.0.1:8080"}, `--url "127.0.0.1:8080": not an http(s) base URL such as http://127.0.0.1:8080`},
		{[]string{"--url", "http://"}, `--url "http://": not an http(s) base URL`},
		{[]string{"--url", "http://127.0.0.1:0"}, `--url "http://127.0.0.1:0": the port must be in [1, 65535]`},
		{[]string{"--url", "http://127.0.0.1:8080/?tenant=a"}, `--url "http://127.0.0.1:8080/?tenant=a": it has a query or fragment`},
		{[]string{"--key", "k\n"}, "--key: the API key cannot be sent"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runLoadtest(append(tt.args, "--duration", "100ms"), &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q, want nothing (no loopback server started)", stdout.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tt.want)
			}
		})
	}
}

// TestLoadtestLowRateDigits: rates below 10 req/s print with three
// significant digits instead of %.1f (which printed --rate 0.05 as 0.1 and
// its sent rate as 0.0); higher rates keep one decimal.
func TestLoadtestLowRateDigits(t *testing.T) {
	for _, tt := range []struct {
		target  float64
		offered uint64
		elapsed time.Duration
		want    string
	}{
		{0.05, 1, 20 * time.Second, "target 0.05 req/s  sent 0.05 req/s"},
		{0.5, 1, 3 * time.Second, "target 0.5 req/s  sent 0.333 req/s"},
		{2000, 9999, 5 * time.Second, "target 2000.0 req/s  sent 1999.8 req/s"},
	} {
		tot := load.Totals{
			Elapsed:     tt.elapsed,
			Offered:     tt.offered,
			AchievedRPS: float64(tt.offered) / tt.elapsed.Seconds(),
			Outcomes:    map[string]uint64{wire.OutcomeOK.String(): tt.offered},
			Admitted:    hdrhistogram.New(1, 60_000_000, 3),
		}
		var out bytes.Buffer
		printLoadtest(&out, tt.target, tot)
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("target %v: got\n%s\nwant %q", tt.target, out.String(), tt.want)
		}
	}
}

// TestLoadtestResent: requests net/http resent on its own (a kept-alive
// connection closed without an answer) are said, with what the server got;
// the summary showed 300 ok while the server had received 599 requests.
func TestLoadtestResent(t *testing.T) {
	tot := load.Totals{
		Elapsed: time.Second, Offered: 300, Attempts: 599, Retries: 299, Resent: 299,
		Outcomes: map[string]uint64{wire.OutcomeOK.String(): 300},
		Admitted: hdrhistogram.New(1, 60_000_000, 3),
	}
	var out bytes.Buffer
	printLoadtest(&out, 300, tot)
	if want := "resent 299: the HTTP client wrote a GET again on another connection after the server closed a kept-alive one without answering; the server got 599 requests"; !strings.Contains(out.String(), want) {
		t.Errorf("got:\n%s\nwant %q", out.String(), want)
	}
	tot.Attempts, tot.Retries, tot.Resent = 300, 0, 0
	out.Reset()
	printLoadtest(&out, 300, tot)
	if strings.Contains(out.String(), "resent") {
		t.Errorf("nothing resent, yet:\n%s", out.String())
	}
}

// TestLoadtestLatencyLine: the latency line gives what vegeta and oha give
// (min, mean, p50, p90, p99, p99.9, max) and how many requests it stands
// for; it had p50, p99, p99.9 and max only. 90 answers of 10 ms and 10 of
// 100 ms: p50 and p90 are 10 ms, p99 100 ms, the mean 19 ms (each value
// as the histogram's 3 significant digits hold it).
func TestLoadtestLatencyLine(t *testing.T) {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for range 90 {
		_ = h.RecordValue(10_000)
	}
	for range 10 {
		_ = h.RecordValue(100_000)
	}
	tot := load.Totals{
		Elapsed: time.Second, Offered: 120, Attempts: 120,
		Outcomes: map[string]uint64{wire.OutcomeOK.String(): 100, wire.OutcomeShedRateLimit.String(): 20},
		Admitted: h,
	}
	var out bytes.Buffer
	printLoadtest(&out, 120, tot)
	want := "latency from intended time, 100 admitted (not shed): min 10.00 ms  mean 19.00 ms  p50 10.01 ms  p90 10.01 ms  p99 100.03 ms  p99.9 100.03 ms  max 100.03 ms\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("got:\n%s\nwant %q", out.String(), want)
	}
}

// TestLoadtestJSON: --json prints the summary as one JSON object and
// nothing else on stdout (the loopback address goes to stderr), with the
// text summary's figures: 200 req/s for 300 ms against the loopback
// server is 60 requests, all answered 200.
func TestLoadtestJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runLoadtest([]string{"--json", "--rate", "200", "--duration", "300ms"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	var got loadtestSummary
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not the summary: %v", err)
	}
	if dec.More() {
		t.Error("stdout has more than one JSON value")
	}
	if got.TargetRPS != 200 || got.Offered != 60 || got.Outcomes[wire.OutcomeOK.String()] != 60 ||
		got.Status[200] != 60 || len(got.NoAnswer) != 0 || got.Attempts != 60 || got.Unaccounted != 0 ||
		got.Interrupted || got.ServerReceived == nil || *got.ServerReceived != 60 ||
		got.Latency == nil || got.Latency.Count != 60 || got.Latency.Max < got.Latency.P50 {
		t.Errorf("summary %+v (latency %+v)", got, got.Latency)
	}
	if _, ok := got.Outcomes[wire.OutcomeGeneratorDropped.String()]; !ok {
		t.Errorf("outcomes %v lack generator_dropped: every outcome should be there", got.Outcomes)
	}
	if !strings.HasPrefix(stderr.String(), "loopback server on 127.0.0.1:") {
		t.Errorf("stderr %q, want the loopback address", stderr.String())
	}
}
