// Package redisproc runs a real redis-server as a child process on a free
// loopback port, with no persistence, and can kill, pause and restart it on
// the same port. The lab uses it for `redis: auto` and the redis_outage
// fault; package redistest wraps it for tests.
package redisproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotFound is returned (wrapped) by Start when redis-server is not on
// PATH.
var ErrNotFound = errors.New("redis-server not found on PATH")

// Binary is the executable Start looks up on PATH.
const Binary = "redis-server"

const (
	// startAttempts bounds how many free ports Start tries when another
	// process takes the chosen one before redis binds it.
	startAttempts = 5
	// readyTimeout bounds the wait for PONG when ctx has no deadline.
	readyTimeout = 10 * time.Second
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL.
	StopGrace = 3 * time.Second
)

// Option configures Start.
type Option func(*Process)

// WithStarter starts each redis-server process with start instead of
// exec.Cmd.Start (the lab passes its spawner, which ties children to the
// lab's life). start must set up the process group: signals go to -pid.
func WithStarter(start func(*exec.Cmd) error) Option {
	return func(p *Process) { p.starter = start }
}

// Process is one redis-server child: on a free loopback port, with no
// persistence (no RDB snapshots, no AOF), so a kill loses every limit's
// state, as a real Redis failure without persistence does. Its port stays
// the same across Kill and Restart, so clients reconnect to the same URL.
// Methods are safe for concurrent use.
type Process struct {
	bin     string
	starter func(*exec.Cmd) error
	dir     string // working directory; holds redis.log
	logPath string
	port    int // fixed after Start

	mu      sync.Mutex
	cmd     *exec.Cmd     // the current process, nil when none; guarded by mu
	exited  chan struct{} // closed when cmd has been waited for; guarded by mu
	logFile *os.File      // the current process's output; guarded by mu
}

// Start starts redis-server on a free loopback port, logging to
// dir/redis.log, and waits until it answers PING (bounded by ctx, or 10 s
// when ctx has no deadline). When redis-server is not on PATH the error
// wraps ErrNotFound and says how to install it.
func Start(ctx context.Context, dir string, opts ...Option) (*Process, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	bin, err := exec.LookPath(Binary)
	if err != nil {
		return nil, fmt.Errorf("%w (install it, e.g. `apt-get install redis-server` or `brew install redis`): %v", ErrNotFound, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("redis: log dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("redis: log dir: %w", err)
	}
	r := &Process{bin: bin, starter: startInGroup, dir: abs, logPath: filepath.Join(abs, "redis.log")}
	for _, o := range opts {
		o(r)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		if r.port, err = freeLoopbackPort(); err != nil {
			return nil, fmt.Errorf("redis: pick a free port: %w", err)
		}
		if lastErr = r.start(ctx); lastErr == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("redis: %w", lastErr)
}

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
	defer logFile.Close()
	pid := cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("redis: signal %v to pid %d: %w", sig, pid, err)
	}
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

// start runs one redis-server on r.port and waits for PING.
func (r *Process) start(ctx context.Context) error {
	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	cmd := exec.Command(r.bin,
		"--port", strconv.Itoa(r.port),
		"--bind", "127.0.0.1",
		"--save", "", // no RDB snapshots
		"--appendonly", "no", // no AOF
		"--dir", r.dir,
		"--daemonize", "no",
		"--logfile", "", // to stdout, i.e. the log file
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := r.starter(cmd); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", r.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	if err := waitPing(ctx, r.Addr(), exited); err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logFile.Close()
		return fmt.Errorf("redis-server on port %d: %w%s", r.port, err, redisLogTail(r.logPath))
	}
	r.mu.Lock()
	r.cmd, r.exited, r.logFile = cmd, exited, logFile
	r.mu.Unlock()
	return nil
}

// waitPing polls addr with PING until PONG, the process exits or ctx
// ends.
func waitPing(ctx context.Context, addr string, exited <-chan struct{}) error {
	var err error
	for {
		select {
		case <-exited:
			return errors.New("exited before answering PING")
		case <-ctx.Done():
			return fmt.Errorf("no PONG: %w (last: %v)", ctx.Err(), err)
		default:
		}
		if err = Ping(addr, 200*time.Millisecond); err == nil {
			return nil
		}
		select {
		case <-exited:
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Ping sends PING to addr and reports whether PONG came back within
// timeout.
func Ping(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(line); got != "+PONG" {
		return fmt.Errorf("PING answered %q", got)
	}
	return nil
}

// redisLogTail is the last lines of the log, for error messages.
func redisLogTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return "; its log ends: " + strings.Join(lines, " | ")
}

// freeLoopbackPort asks the kernel for a free loopback port. Another process
// may take it before the child binds it; callers retry.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Pause sends SIGSTOP: Redis keeps its connections but answers nothing —
// what a hung or swapping Redis looks like to a gateway. Resume undoes it;
// Kill and Stop work on a paused child.
func (r *Process) Pause() error { return r.signal(syscall.SIGSTOP) }

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
