package redisproc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/alicebob/miniredis/v2"

	"github.com/levee-lab/levee/internal/wire"
)

// ReadyLine is the embedded server's ready line for addr, without newline
// (wire.Ready, kind wire.KindRedis):
// {"levee_ready":{"kind":"redis","listen":"127.0.0.1:41234","admin":"","pid":123}}.
func ReadyLine(addr string) []byte {
	return wire.Ready{Kind: wire.KindRedis, Listen: addr, PID: os.Getpid()}.Line()
}

// ParseReadyLine returns the listen address of an embedded server's ready
// line, and false when line is not one.
func ParseReadyLine(line []byte) (string, bool) {
	r, ok := wire.ParseReady(line)
	if !ok || r.Kind != wire.KindRedis {
		return "", false
	}
	return r.Listen, true
}

// embeddedGOGC is the embedded server's GC target: measured here, 400 about
// doubled the decisions per second over the default 100, for an RSS of
// ~35 MB instead of ~22 MB.
const embeddedGOGC = 400

// Serve runs the embedded Redis-protocol server on listen (e.g.
// 127.0.0.1:0) until ctx ends, then closes it. Once it accepts connections
// it writes its ready line (ReadyLine) and a newline to ready. It returns an
// error when it cannot listen.
//
// The server is miniredis: it keeps everything in memory (no persistence,
// like the redis-server children), runs EVAL/EVALSHA/SCRIPT LOAD with the
// Lua scripts' TIME read from this machine's clock, and expires keys as
// that clock advances, as Redis does. It has no authentication: bind it to
// loopback.
//
// Serve is meant to be its process's whole work: unless GOGC is set, it
// sets the garbage collector's target to embeddedGOGC, because miniredis
// builds a new Lua state for every script call, and collecting those at
// the default pace took half of each decision's cost.
func Serve(ctx context.Context, listen string, ready io.Writer) error {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(embeddedGOGC)
	}
	m := miniredis.NewMiniRedis()
	// TTLs follow the wall clock, as in Redis, so idle limits go away
	// (miniredis's default, for unit tests, freezes them).
	m.ClockTTL(true)
	if err := m.StartAddr(listen); err != nil {
		return fmt.Errorf("redis: embedded server: listen on %s: %w", listen, err)
	}
	defer m.Close()
	if _, err := fmt.Fprintf(ready, "%s\n", ReadyLine(m.Addr())); err != nil {
		return fmt.Errorf("redis: embedded server: ready line: %w", err)
	}
	<-ctx.Done()
	return nil
}

// childEnv, set to a listen address, makes RunChildIfAsked serve the
// embedded server there instead of returning.
const childEnv = "LEVEE_REDISPROC_EMBEDDED_LISTEN"

// RunChildIfAsked turns this process into an embedded server child when it
// was started by SelfCommand: it serves on the address SelfCommand gave,
// exits 0 on SIGTERM or SIGINT and 1 on error, and never returns. Otherwise
// it returns at once. Test binaries that start embedded children with
// SelfCommand call it first thing in TestMain.
func RunChildIfAsked() {
	listen, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Serve(ctx, listen, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		stop()
		os.Exit(1)
	}
	stop()
	os.Exit(0)
}

// SelfCommand is a command builder for WithEmbeddedCommand that runs this
// very executable as the embedded server: a test binary whose TestMain
// calls RunChildIfAsked. (A test binary that does not runs no tests,
// because of -test.run=^$, and exits without a ready line: the start fails
// with a clear error instead of recursing.)
func SelfCommand(listen string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+listen)
	return cmd
}
