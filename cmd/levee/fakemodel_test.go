package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFakemodelHelpTypes: --help names each knob flag's value by what it
// is (n, ms, share…), never "string" for a number.
func TestFakemodelHelpTypes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runFakemodel([]string{"--help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("--help exit %d", code)
	}
	help := stderr.String()
	for _, w := range []string{"-slots n\n", "-error-rate share\n", "-p50-ms ms\n", "-queue-size n\n", "-latency distribution\n", "-overflow mode\n", "-ballast-mb MB\n", "-abort-on-disconnect\n"} {
		if !strings.Contains(help, "  "+w) {
			t.Errorf("--help lacks %q:\n%s", w, help)
		}
	}
	for _, kf := range fakemodelKnobFlags {
		if m := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(kf.flag) + ` (string|value)$`).FindString(help); m != "" {
			t.Errorf("--help shows %q", m)
		}
	}
}

// TestFakemodelKnobFlags: a knob flag given sets its knob, 0 included; one
// not given leaves --knobs' value; a bad number is a usage error, and a
// value out of its knob's range is one naming the flag.
func TestFakemodelKnobFlags(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(k map[string]any) bool
		wantErr  string
	}{
		{name: "given", args: []string{"--slots", "8", "--error-rate", "0.25", "--overflow", "reject"}, check: func(k map[string]any) bool {
			return k["slots"] == 8.0 && k["error_rate"] == 0.25 && k["overflow"] == "reject"
		}},
		{name: "given as zero", args: []string{"--knobs", `{"error_rate":0.5}`, "--error-rate", "0"}, check: func(k map[string]any) bool { return k["error_rate"] == 0.0 }},
		{name: "not given keeps --knobs", args: []string{"--knobs", `{"error_rate":0.5}`}, check: func(k map[string]any) bool { return k["error_rate"] == 0.5 }},
		{name: "latency knob", args: []string{"--p50-ms", "12.5"}, check: func(k map[string]any) bool {
			l, ok := k["latency"].(map[string]any)
			return ok && l["p50_ms"] == 12.5
		}},
		{name: "not a whole number", args: []string{"--slots", "1.5"}, wantCode: 2, wantErr: `invalid value "1.5" for flag -slots: want a whole number`},
		{name: "not a number", args: []string{"--error-rate", "lots"}, wantCode: 2, wantErr: `invalid value "lots" for flag -error-rate: want a finite number`},
		{name: "not finite", args: []string{"--p50-ms", "Inf"}, wantCode: 2, wantErr: "want a finite number"},
		// A knob flag's refused value is told by the flag as typed, not by
		// the knob's wire name ("knob flags: knob queue_size: …").
		{name: "out of the knob's range", args: []string{"--slots", "0"}, wantCode: 2, wantErr: "levee fakemodel: --slots 0: must be in [1, 100000], got 0\n"},
		{name: "negative queue size", args: []string{"--queue-size", "-1"}, wantCode: 2, wantErr: "levee fakemodel: --queue-size -1: must be in"},
		{name: "unknown distribution", args: []string{"--latency", "bogus"}, wantCode: 2, wantErr: `levee fakemodel: --latency bogus: must be one of lognormal, fixed, uniform`},
		{name: "p99 below p50", args: []string{"--p50-ms", "100", "--p99-ms", "50"}, wantCode: 2, wantErr: "levee fakemodel: --p99-ms 50: must be in [100, "},
		// A bound another flag moved: no flag set the knob refused.
		{name: "p50 above the default p99", args: []string{"--p50-ms", "100000"}, wantCode: 2, wantErr: "knob flags: knob latency.p99_ms: "},
		{name: "--knobs names a knob twice", args: []string{"--knobs", `{"slots":9,"slots":10}`}, wantCode: 2, wantErr: "knob slots: given twice"},
		{name: "--knobs cut short", args: []string{"--knobs", `{"slots":`}, wantCode: 2, wantErr: "--knobs: malformed JSON: unexpected EOF"},
		{name: "--knobs in upper case", args: []string{"--knobs", `{"SLOTS":3}`}, wantCode: 2, wantErr: "knob SLOTS: unknown knob (names are lower case: slots)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runFakemodel(append(tt.args, "--print-knobs"), &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if tt.wantCode != 0 {
				if !strings.Contains(stderr.String(), tt.wantErr) {
					t.Errorf("stderr lacks %q:\n%s", tt.wantErr, stderr.String())
				}
				return
			}
			var k map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &k); err != nil {
				t.Fatalf("knobs %q: %v", stdout.String(), err)
			}
			if !tt.check(k) {
				t.Errorf("knobs %s", stdout.String())
			}
		})
	}
}

// TestFakemodelBadFlags: bad addresses, node counts and drain times are
// usage errors (exit 2) found before anything starts: no admin token is
// made or printed, nothing listens.
func TestFakemodelBadFlags(t *testing.T) {
	t.Setenv("LEVEE_ADMIN_TOKEN", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"negative drain", []string{"--drain", "-5s"}, "--drain -5s: want ≥ 0"},
		{"no nodes", []string{"--nodes", "0"}, "--nodes 0: want 1 to 1024"},
		{"too many nodes", []string{"--nodes", "9223372036854775807"}, "--nodes 9223372036854775807: want 1 to 1024"},
		{"port out of range", []string{"--port", "70000"}, "--port 70000: want 0 to 65535"},
		{"negative port", []string{"--port", "-1"}, "--port -1: want 0 to 65535"},
		{"last node's port out of range", []string{"--port", "65535", "--nodes", "2"}, "the last node's port 65536 is above 65535"},
		{"listen port out of range", []string{"--listen", "127.0.0.1:99999"}, "want a port from 0 to 65535"},
		{"listen without a port", []string{"--listen", "127.0.0.1"}, `--listen "127.0.0.1"`},
		{"an argument", []string{"extra"}, "unexpected arguments"},
		{"max tokens 0", []string{"--max-tokens", "0"}, "--max-tokens 0: want 1 to 16777216"},
		{"max tokens over the ceiling", []string{"--max-tokens", "16777217"}, "--max-tokens 16777217: want 1 to 16777216"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- runFakemodel(tt.args, &stdout, &stderr) }()
			var code int
			select {
			case code = <-done:
			case <-time.After(10 * time.Second):
				// Without the check a bad flag can start the nodes, which
				// then serve until a signal: fail instead of hanging.
				t.Fatal("still running after 10s: the nodes started")
			}
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr lacks %q:\n%s", tt.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "admin token") || stdout.Len() > 0 {
				t.Errorf("started something before failing: stdout %q, stderr %q", stdout.String(), stderr.String())
			}
		})
	}
}

// TestFakemodelAddr: the happy cases of the address check.
func TestFakemodelAddr(t *testing.T) {
	for _, tt := range []struct {
		listen      string
		port, nodes int
		host        string
		first       int
	}{
		{"127.0.0.1:0", 0, 1, "127.0.0.1", 0},
		{"127.0.0.1:0", 9000, 3, "127.0.0.1", 9000},
		{"0.0.0.0:8080", 0, 2, "0.0.0.0", 8080},
		{"[::1]:0", 65534, 2, "::1", 65534},
		{"127.0.0.1:0", 0, maxFakemodelNodes, "127.0.0.1", 0},
	} {
		host, first, err := fakemodelAddr(tt.listen, tt.port, tt.nodes)
		if err != nil || host != tt.host || first != tt.first {
			t.Errorf("fakemodelAddr(%q, %d, %d) = %q, %d, %v; want %q, %d", tt.listen, tt.port, tt.nodes, host, first, err, tt.host, tt.first)
		}
	}
}

// The zero knobValue prints as no default, as --help needs.
var _ flag.Value = (*knobValue)(nil)
