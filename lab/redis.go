package lab

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

// ErrNoRedisServer is returned (wrapped) by StartRedis when redis-server is
// not on PATH. The lab then runs with in-process limits and says so.
var ErrNoRedisServer = errors.New("redis-server not found on PATH")

// RedisBinary is the executable StartRedis looks up on PATH.
const RedisBinary = "redis-server"

const (
	// redisStartAttempts bounds how many free ports StartRedis tries when
	// another process takes the chosen one before redis binds it.
	redisStartAttempts = 5
	// redisReadyTimeout bounds the wait for PONG when ctx has no deadline.
	redisReadyTimeout = 10 * time.Second
	// redisStopGrace is how long Stop waits after SIGTERM before SIGKILL.
	redisStopGrace = 3 * time.Second
)

// RedisChild is the lab's redis-server child process (`redis: auto`): on a
// free loopback port, with no persistence (no RDB snapshots, no AOF), so a
// kill loses every limit's state, as a real Redis failure without
// persistence does. It is started with StartProcess, so it dies with the
// lab. Its port stays the same across Kill and Restart, so gateways
// reconnect to the same URL. Methods are safe for concurrent use.
type RedisChild struct {
	bin     string
	dir     string // working directory; holds redis.log
	logPath string
	port    int // fixed after StartRedis

	mu      sync.Mutex
	cmd     *exec.Cmd     // the current process, nil when none; guarded by mu
	exited  chan struct{} // closed when cmd has been waited for; guarded by mu
	logFile *os.File      // the current process's output; guarded by mu
}

// StartRedis starts redis-server on a free loopback port, logging to
// dir/redis.log, and waits until it answers PING (bounded by ctx, or 10 s
// when ctx has no deadline). When redis-server is not on PATH the error
// wraps ErrNoRedisServer and says how to install it.
func StartRedis(ctx context.Context, dir string) (*RedisChild, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	bin, err := exec.LookPath(RedisBinary)
	if err != nil {
		return nil, fmt.Errorf("lab: %w (install it, e.g. `apt-get install redis-server` or `brew install redis`; without it the lab keeps rate limits in each gateway): %v", ErrNoRedisServer, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: redis: log dir: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lab: redis: log dir: %w", err)
	}
	r := &RedisChild{bin: bin, dir: abs, logPath: filepath.Join(abs, "redis.log")}
	var lastErr error
	for attempt := 0; attempt < redisStartAttempts; attempt++ {
		if r.port, err = freeLoopbackPort(); err != nil {
			return nil, fmt.Errorf("lab: redis: pick a free port: %w", err)
		}
		if lastErr = r.start(ctx); lastErr == nil {
			return r, nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("lab: redis: %w", lastErr)
}

// URL is the redis:// URL gateways connect to.
func (r *RedisChild) URL() string { return "redis://" + r.Addr() + "/0" }

// Addr is the loopback host:port Redis listens on.
func (r *RedisChild) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(r.port)) }

// LogPath is the file the child's output goes to (appended across restarts).
func (r *RedisChild) LogPath() string { return r.logPath }

// PID is the current process's id, 0 when none runs.
func (r *RedisChild) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the child process is alive.
func (r *RedisChild) Running() bool {
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

// Kill SIGKILLs Redis (its process group) and waits for it to exit: the
// redis_outage fault. Killing a child that is not running returns nil.
func (r *RedisChild) Kill() error { return r.stop(syscall.SIGKILL, 0) }

// Stop ends Redis gracefully (SIGTERM, then SIGKILL after a grace period)
// and waits for it. Stopping a child that is not running returns nil.
func (r *RedisChild) Stop() error { return r.stop(syscall.SIGTERM, redisStopGrace) }

// Restart starts Redis again on the same port — killing the current
// process first if it still runs — and waits for PING. The new Redis is
// empty.
func (r *RedisChild) Restart(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := r.Kill(); err != nil {
		return err
	}
	var err error
	// The port was free a moment ago; a brief collision (another process
	// binding it) is retried until ctx or a few attempts run out.
	for attempt := 0; attempt < redisStartAttempts; attempt++ {
		if err = r.start(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lab: redis: restart on port %d: %w (last error: %v)", r.port, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("lab: redis: restart on port %d: %w", r.port, err)
}

func (r *RedisChild) stop(sig syscall.Signal, grace time.Duration) error {
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
		return fmt.Errorf("lab: redis: signal %v to pid %d: %w", sig, pid, err)
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
func (r *RedisChild) start(ctx context.Context) error {
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
	if err := StartProcess(cmd); err != nil {
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
		ctx, cancel = context.WithTimeout(ctx, redisReadyTimeout)
		defer cancel()
	}
	if err := waitRedisPing(ctx, r.Addr(), exited); err != nil {
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

// waitRedisPing polls addr with PING until PONG, the process exits or ctx
// ends.
func waitRedisPing(ctx context.Context, addr string, exited <-chan struct{}) error {
	var err error
	for {
		select {
		case <-exited:
			return errors.New("exited before answering PING")
		case <-ctx.Done():
			return fmt.Errorf("no PONG: %w (last: %v)", ctx.Err(), err)
		default:
		}
		if err = RedisPing(addr, 200*time.Millisecond); err == nil {
			return nil
		}
		select {
		case <-exited:
		case <-ctx.Done():
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// RedisPing sends PING to addr and reports whether PONG came back within
// timeout.
func RedisPing(addr string, timeout time.Duration) error {
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
func (r *RedisChild) Pause() error { return r.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused child.
func (r *RedisChild) Resume() error { return r.signal(syscall.SIGCONT) }

func (r *RedisChild) signal(sig syscall.Signal) error {
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		return fmt.Errorf("lab: redis: %v: not running", sig)
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("lab: redis: %v: %w", sig, err)
	}
	return nil
}
