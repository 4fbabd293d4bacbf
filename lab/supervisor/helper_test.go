package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// The supervisor's tests run real child processes: this test binary,
// re-executed as a stand-in gateway. Its config file (GatewayConfig's
// output, "key: value" lines) says what it does:
//
//	mode: serve  bind listen and admin, print the ready line, serve
//	             /metrics and /crash (exit 3) until killed
//	mode: exit   exit 1 before any ready line
//	mode: hang   say so on stderr, and never print a ready line
//
// Re-executed as "lab DIR", it is a lab of its own: a Supervisor of two
// stand-in gateways, which prints their pids and waits to be killed.
//
//	mode: grow   serve, and grow its heap by 4 MiB every 10 ms (touched,
//	             so it is resident) up to 256 MiB
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "gateway" {
		os.Exit(helperGateway(os.Args[2:]))
	}
	if len(os.Args) > 2 && os.Args[1] == "lab" {
		os.Exit(helperLabProcess(os.Args[2]))
	}
	os.Exit(m.Run())
}

func helperGateway(args []string) int {
	if len(args) != 2 || args[0] != "--config" {
		fmt.Fprintln(os.Stderr, "helper: want --config FILE")
		return 2
	}
	cfg := map[string]string{}
	f, err := os.Open(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			cfg[k] = v
		}
	}
	f.Close()
	switch cfg["mode"] {
	case "exit":
		fmt.Fprintln(os.Stderr, "helper: exiting before ready, as told")
		return 1
	case "hang":
		fmt.Fprintln(os.Stderr, "helper: hanging before ready, as told")
		select {}
	}
	ln, err := net.Listen("tcp", cfg["listen"])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	adm, err := net.Listen("tcp", cfg["admin"])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc(wire.PathMetrics, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE levee_admitted_total counter\nlevee_admitted_total 1\n")
	})
	mux.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) { os.Exit(3) })
	go http.Serve(ln, mux)
	go http.Serve(adm, mux)
	if cfg["mode"] == "grow" {
		go grow()
	}
	fmt.Printf("%s\n", wire.Ready{Kind: wire.KindGateway, Listen: ln.Addr().String(), Admin: adm.Addr().String(), PID: os.Getpid()}.Line())
	select {}
}

// helperLab is a supervisor of stand-in gateways (no nodes, no Redis)
// whose mode comes from mode(start) at each start (0-based), and the
// events it recorded.
type helperLab struct {
	*Supervisor
	evMu   sync.Mutex
	events []helperEvent
}

type helperEvent struct {
	kind, detail string
	fields       map[string]any
}

func startHelperLab(t *testing.T, gateways int, cfg Config, mode func(start int) string) *helperLab {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &helperLab{}
	var starts sync.Mutex
	n := 0
	cfg.Executable, cfg.Token = exe, "0123456789abcdef-token"
	cfg.LogsDir, cfg.WorkDir = t.TempDir(), t.TempDir()
	cfg.Gateways = gateways
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 20 * time.Second
	}
	cfg.GatewayConfig = func(listen, admin string, _ []string, _ string) ([]byte, error) {
		starts.Lock()
		defer starts.Unlock()
		m := mode(n)
		n++
		return fmt.Appendf(nil, "mode: %s\nlisten: %s\nadmin: %s\n", m, listen, admin), nil
	}
	cfg.Event = func(kind, detail string, fields map[string]any) {
		h.evMu.Lock()
		h.events = append(h.events, helperEvent{kind, detail, fields})
		h.evMu.Unlock()
	}
	cfg.Progress = func(format string, args ...any) { t.Logf(format, args...) }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.Supervisor = s
	t.Cleanup(s.Close)
	return h
}

// eventsOf returns the recorded events of kind.
func (h *helperLab) eventsOf(kind string) []helperEvent {
	h.evMu.Lock()
	defer h.evMu.Unlock()
	var out []helperEvent
	for _, e := range h.events {
		if e.kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls cond until it holds, failing the test after limit: a bound
// on something that must happen, never a measure of speed.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// crash makes gateway g exit on its own (status 3) and waits until the
// supervisor has seen it end.
func (h *helperLab) crash(t *testing.T, g *Child) {
	t.Helper()
	pid := g.PID()
	resp, err := http.Get("http://" + g.Admin() + "/crash")
	if err == nil {
		resp.Body.Close()
	}
	// With a short restart delay the child can be down for less than a
	// poll, and up again as another process: either says it crashed.
	waitFor(t, 10*time.Second, g.Name()+" still up after /crash", func() bool { return !g.Up() || g.PID() != pid })
}

var held [][]byte

func grow() {
	for range 64 {
		b := make([]byte, 4<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		held = append(held, b)
		time.Sleep(10 * time.Millisecond)
	}
	select {}
}

func helperLabProcess(dir string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s, err := Start(context.Background(), Config{
		Executable: exe, Token: "0123456789abcdef-token", LogsDir: dir, WorkDir: dir,
		ReadyTimeout: 20 * time.Second, Gateways: 2, RestartDelay: time.Hour,
		GatewayConfig: func(listen, admin string, _ []string, _ string) ([]byte, error) {
			return fmt.Appendf(nil, "mode: serve\nlisten: %s\nadmin: %s\n", listen, admin), nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, p := range s.ChildPIDs() {
		fmt.Println(p)
	}
	fmt.Println("ready")
	select {}
}
