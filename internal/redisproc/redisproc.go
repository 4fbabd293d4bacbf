// Package redisproc runs a Redis-protocol server as a child process on a
// loopback port, with no persistence, and can kill (SIGKILL), pause
// (SIGSTOP) and restart it on the same port. Two kinds share one API:
//
//   - KindServer: a real redis-server (Start);
//   - KindEmbedded: an embedded Redis-compatible server (miniredis, which
//     runs Levee's Lua scripts) in its own process, `levee redis --listen
//     ADDR` (StartEmbedded), so that an outage is still a real SIGKILL of a
//     real process on a machine without redis-server.
//
// StartAuto picks redis-server when it is on PATH and the embedded server
// otherwise. StartCluster runs a Redis Cluster of redis-server processes.
// The lab uses the package for `redis: auto|cluster` and the redis_outage
// fault; package redistest wraps it for tests.
package redisproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNotFound is returned (wrapped) by Start when redis-server is not on
// PATH.
var ErrNotFound = errors.New("redis-server not found on PATH")

// Binary is the executable Start looks up on PATH.
const Binary = "redis-server"

// Kind is the kind of server a Process runs.
type Kind string

// The kinds of Process.
const (
	// KindServer is a real redis-server.
	KindServer Kind = "server"
	// KindEmbedded is the embedded Redis-protocol server (miniredis) in its
	// own child process.
	KindEmbedded Kind = "embedded"
)

const (
	// startAttempts bounds how many free ports Start tries when another
	// process takes the chosen one before redis binds it.
	startAttempts = 5
	// readyTimeout bounds the wait for PONG when ctx has no deadline.
	readyTimeout = 10 * time.Second
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	StopGrace = 3 * time.Second
)

// Option configures Start, StartEmbedded, StartAuto and StartCluster.
type Option func(*settings)

type settings struct {
	starter  func(*exec.Cmd) error
	embedded func(listen string) *exec.Cmd // nil: LeveeCommand(os.Executable())
	extra    func(port int) []string       // more redis-server arguments (cluster nodes)
	logName  string                        // log file name in dir; default redis.log
}

// WithStarter starts each child process with start instead of
// exec.Cmd.Start (the lab passes its spawner, which ties children to the
// lab's life). start must set up the process group: signals go to -pid.
func WithStarter(start func(*exec.Cmd) error) Option {
	return func(s *settings) { s.starter = start }
}

// WithEmbeddedCommand sets how the embedded server's process is built:
// command(listen) must return a command that serves the embedded server on
// listen (an address such as 127.0.0.1:0 or 127.0.0.1:41234), prints the
// ready line (ReadyLine) on stdout once it accepts connections, and exits on
// SIGTERM. The default is LeveeCommand(os.Executable()): this binary's
// `redis` subcommand. Tests use SelfCommand.
func WithEmbeddedCommand(command func(listen string) *exec.Cmd) Option {
	return func(s *settings) { s.embedded = command }
}

// LeveeCommand returns a command builder for WithEmbeddedCommand that runs
// `exe redis --listen LISTEN`, exe being a levee binary.
func LeveeCommand(exe string) func(listen string) *exec.Cmd {
	return func(listen string) *exec.Cmd { return exec.Command(exe, "redis", "--listen", listen) }
}

func newSettings(opts []Option) settings {
	s := settings{starter: startInGroup, logName: "redis.log"}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// Process is one Redis child: on a loopback port, with no persistence (no
// RDB snapshots, no AOF), so a kill loses every limit's state, as a real
// Redis failure without persistence does. Its port stays the same across
// Kill and Restart, so clients reconnect to the same URL. Methods are safe
// for concurrent use.
type Process struct {
	kind    Kind
	bin     string                   // the executable, for messages
	command func(port int) *exec.Cmd // the next process's command; port 0: the child picks one (embedded)
	starter func(*exec.Cmd) error
	dir     string // working directory; holds the log
	logPath string
	port    int // fixed once the first start succeeded

	mu      sync.Mutex
	cmd     *exec.Cmd     // the current process, nil when none; guarded by mu
	exited  chan struct{} // closed when cmd has been waited for and its output copied; guarded by mu
	logFile *os.File      // the current process's output; guarded by mu
}

// Start starts redis-server on a free loopback port, logging to
// dir/redis.log, and waits until it answers PING (bounded by ctx, or 10 s
// when ctx has no deadline). When redis-server is not on PATH the error
// wraps ErrNotFound and says how to install it.
func Start(ctx context.Context, dir string, opts ...Option) (*Process, error) {
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return nil, fmt.Errorf("%w (install it, e.g. `apt-get install redis-server` or `brew install redis`): %v", ErrNotFound, err)
	}
	s := newSettings(opts)
	r, err := newProcess(KindServer, bin, dir, s)
	if err != nil {
		return nil, err
	}
	r.command = func(port int) *exec.Cmd {
		args := []string{
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "", // no RDB snapshots
			"--appendonly", "no", // no AOF
			"--dir", r.dir,
			"--daemonize", "no",
			"--logfile", "", // to stdout, i.e. the log file
		}
		if s.extra != nil {
			args = append(args, s.extra(port)...)
		}
		return exec.Command(bin, args...)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		if r.port, err = freeLoopbackPort(); err != nil {
			return nil, fmt.Errorf("redis: pick a free port: %w", err)
		}
		if lastErr = r.start(ctx); lastErr == nil {
			return r, nil
		}
		if ctx != nil && ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("redis: %w", lastErr)
}

// StartEmbedded starts the embedded Redis-protocol server in its own child
// process (see WithEmbeddedCommand) on a free loopback port the child picks,
// logging to dir/redis.log, and waits for its ready line and PING (bounded
// by ctx, or 10 s when ctx has no deadline).
func StartEmbedded(ctx context.Context, dir string, opts ...Option) (*Process, error) {
	s := newSettings(opts)
	build := s.embedded
	if build == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("redis: embedded: find this executable: %w", err)
		}
		build = LeveeCommand(exe)
	}
	probe := build("127.0.0.1:0")
	r, err := newProcess(KindEmbedded, probe.Path, dir, s)
	if err != nil {
		return nil, err
	}
	r.command = func(port int) *exec.Cmd {
		return build(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	if err := r.start(ctx); err != nil {
		return nil, fmt.Errorf("redis: embedded: %w", err)
	}
	return r, nil
}

// StartAuto starts redis-server when it is on PATH (Start), else the
// embedded server (StartEmbedded). Process.Kind says which.
func StartAuto(ctx context.Context, dir string, opts ...Option) (*Process, error) {
	if _, err := exec.LookPath(Binary); err == nil {
		return Start(ctx, dir, opts...)
	}
	return StartEmbedded(ctx, dir, opts...)
}

func newProcess(kind Kind, bin, dir string, s settings) (*Process, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis: log dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("redis: log dir: %w", err)
	}
	return &Process{kind: kind, bin: bin, starter: s.starter, dir: abs, logPath: filepath.Join(abs, s.logName)}, nil
}

// Kind reports which server the Process runs.
func (r *Process) Kind() Kind { return r.kind }

// URL is the redis:// URL gateways connect to.
func (r *Process) URL() string { return "redis://" + r.Addr() + "/0" }

// Addr is the loopback host:port Redis listens on.
func (r *Process) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// Port is the TCP port Redis listens on, fixed for the Process's life.
func (r *Process) Port() int { return r.port }

// LogPath is the file the child's output goes to (appended across restarts).
func (r *Process) LogPath() string { return r.logPath }

// PID is the current process's id, 0 when none runs.
func (r *Process) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the child process is alive.
func (r *Process) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return false
	}
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs Redis (its process group) and waits for it to exit.
// Killing a child that is not running returns nil.
func (r *Process) Kill() error { return r.stop(syscall.SIGKILL, 0) }

// Stop ends Redis gracefully (SIGTERM, then SIGKILL after a grace period)
// and waits for it. Stopping a child that is not running returns nil.
func (r *Process) Stop() error { return r.stop(syscall.SIGTERM, StopGrace) }

// Restart starts Redis again on the same port — killing the current
// process first if it still runs — and waits for PING. The new Redis is
// empty.
func (r *Process) Restart(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.Kill(); err != nil {
		return err
	}
	var err error
	// The port was free a moment ago; a brief collision (another process
	// binding it) is retried until ctx or a few attempts run out.
	for attempt := 0; attempt < startAttempts; attempt++ {
		if err = r.start(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis: restart on port %d: %w (last error: %v)", r.port, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("redis: restart on port %d: %w", r.port, err)
}

func (r *Process) stop(sig syscall.Signal, grace time.Duration) error {
	r.mu.Lock()
	cmd, exited, logFile := r.cmd, r.exited, r.logFile
	r.cmd, r.logFile = nil, nil
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	pid := cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		// Leave it as it was: a later Kill can try again.
		r.mu.Lock()
		if r.cmd == nil {
			r.cmd, r.logFile = cmd, logFile
		}
		r.mu.Unlock()
		return fmt.Errorf("redis: signal %v to pid %d: %w", sig, pid, err)
	}
	defer logFile.Close()
	_ = syscall.Kill(-pid, syscall.SIGCONT) // a paused Redis must run to act on SIGTERM
	if grace > 0 {
		select {
		case <-exited:
			return nil
		case <-time.After(grace):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	<-exited
	return nil
}

// Pause sends SIGSTOP and returns once the child has stopped (bounded by a
// second): Redis keeps its connections but answers nothing — what a hung
// or swapping Redis looks like to a gateway. Resume undoes it; Kill and
// Stop work on a paused child.
func (r *Process) Pause() error {
	if err := r.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	if pid := r.PID(); pid != 0 && !waitStopped(pid, time.Second) {
		return fmt.Errorf("redis: SIGSTOP: pid %d not stopped after 1s", pid)
	}
	return nil
}

// Resume sends SIGCONT to a paused child.
func (r *Process) Resume() error { return r.signal(syscall.SIGCONT) }

func (r *Process) signal(sig syscall.Signal) error {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("redis: %v: not running", sig)
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("redis: %v: %w", sig, err)
	}
	return nil
}

// startInGroup starts cmd in its own process group (and, on Linux, killed
// when the starting thread's process dies).
func startInGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	return cmd.Start()
}
