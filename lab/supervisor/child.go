package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/levee-lab/levee/internal/wire"
)

// Child is one supervised process: a fake model node, a gateway. It can be
// killed and started again with the same arguments (same ports once the
// first start has learned them).
type Child struct {
	name  string // "node-0", "gateway-1"
	kind  string // "node" or "gateway"
	index int    // 0-based within its kind
	exe   string // binary to run
	// args returns the arguments of the next start, given the addresses
	// learned so far ("" before the first start). Called without mu held.
	args    func(index int, listen, admin string) []string
	env     []string // extra environment
	logPath string
	// readyTimeout bounds one start.
	readyTimeout time.Duration
	// onExit is called (from the waiter goroutine) when a process that was
	// up (ready) ends without anybody stopping or killing it on purpose. A
	// process that ends before it is ready is Start's error instead.
	onExit func(c *Child, err error)

	mu sync.Mutex
	// guarded by mu:
	cmd      *exec.Cmd
	pid      int
	listen   string // traffic address learned from the first ready line
	admin    string // admin address (gateway); "" for nodes
	up       bool
	starting bool          // a Start is under way
	expected bool          // the current process is being stopped or killed on purpose
	closed   bool          // Close was called: no more starts
	exited   chan struct{} // closed when the current process has been waited for
	starts   int           // processes started so far
	// startedAt is when the current (or last) process was started, read
	// just before the fork.
	startedAt time.Time
	downAt    time.Time
	restart   time.Time // when a scheduled restart is due (zero: none)
}

// Start starts the process and waits until it prints its ready line, ctx
// ends, or readyTimeout passes. It fails when the process is running or
// another Start of it is under way (one process per child, ever).
func (c *Child) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%s: the lab is stopping", c.name)
	}
	if c.up {
		c.mu.Unlock()
		return fmt.Errorf("%s: already running", c.name)
	}
	if c.starting {
		c.mu.Unlock()
		return fmt.Errorf("%s: already starting", c.name)
	}
	c.starting = true
	listen, admin := c.listen, c.admin
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.starting = false
		c.mu.Unlock()
	}()
	p, err := c.launch(c.args(c.index, listen, admin))
	if err != nil {
		return err
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed { // Close ran while this process was being started
		c.Kill()
		return fmt.Errorf("%s: the lab is stopping", c.name)
	}
	return c.waitReady(ctx, p)
}

// launched is a process just started: its ready line arrives on ready,
// exited closes when it has been waited for (waitErr is then set).
type launched struct {
	ready   <-chan wire.Ready
	exited  <-chan struct{}
	waitErr *error
	// logOff is where this process's output begins in the log, after
	// its start line: what came before is an earlier process's.
	logOff int64
}

// launch starts the process with args, its stderr and stdout going to the
// log (the first ready line on stdout is also sent on ready), and waits for
// it on a goroutine that reports an unexpected exit through onExit.
func (c *Child) launch(args []string) (launched, error) {
	logf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return launched{}, fmt.Errorf("%s: log: %w", c.name, err)
	}
	fmt.Fprintf(logf, "---- %s start: %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), c.exe, strings.Join(args, " "))
	logOff, _ := logf.Seek(0, io.SeekCurrent) // O_APPEND: the end, past the start line
	cmd := exec.Command(c.exe, args...)
	cmd.Env = ChildEnv(c.env...)
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return launched{}, fmt.Errorf("%s: %w", c.name, err)
	}
	startedAt := time.Now() // before the fork: nothing was counted earlier
	if err := StartProcess(cmd); err != nil {
		logf.Close()
		return launched{}, fmt.Errorf("%s: start %s: %w", c.name, c.exe, err)
	}
	ready := make(chan wire.Ready, 1)
	copied := make(chan struct{})
	go copyStdout(stdout, logf, ready, copied)
	exited := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.pid, c.exited, c.expected, c.startedAt = cmd, cmd.Process.Pid, exited, false, startedAt
	c.starts++
	c.mu.Unlock()
	var waitErr error
	go func() {
		<-copied // stdout EOF first, as exec.Cmd.Wait requires for pipes
		waitErr = cmd.Wait()
		fmt.Fprintf(logf, "---- %s exit: %v\n", time.Now().UTC().Format(time.RFC3339Nano), exitText(waitErr))
		logf.Close()
		c.mu.Lock()
		wasUp := c.up
		c.up = false
		c.downAt = time.Now()
		expected := c.expected
		close(exited) // under mu: waitReady never marks an ended process up
		c.mu.Unlock()
		if wasUp && !expected && c.onExit != nil {
			c.onExit(c, waitErr)
		}
	}()
	return launched{ready: ready, exited: exited, waitErr: &waitErr, logOff: logOff}, nil
}

// copyStdout copies the child's stdout to its log line by line, sending the
// first ready line on ready, and closes copied at EOF.
func copyStdout(stdout io.Reader, logf io.Writer, ready chan<- wire.Ready, copied chan<- struct{}) {
	defer close(copied)
	br := bufio.NewReader(stdout)
	sent := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !sent {
				if r, ok := wire.ParseReady(line); ok {
					ready <- r
					sent = true
				}
			}
			logf.Write(line)
		}
		if err != nil {
			return
		}
	}
}

// waitReady waits for p's ready line, its exit, the ready timeout or ctx,
// and learns the child's addresses from the first ready line.
func (c *Child) waitReady(ctx context.Context, p launched) error {
	timeout := c.readyTimeout
	if timeout <= 0 {
		timeout = 15 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.ready:
		c.mu.Lock()
		select {
		case <-p.exited: // it ended right after its ready line
			c.mu.Unlock()
			return c.startError(p, "exited right after its ready line ("+exitText(*p.waitErr)+")")
		default:
		}
		if c.listen == "" {
			c.listen = r.Listen
		}
		if c.admin == "" {
			c.admin = r.Admin
		}
		c.up = true
		c.restart = time.Time{}
		c.mu.Unlock()
		return nil
	case <-p.exited:
		return c.startError(p, "exited before ready ("+exitText(*p.waitErr)+")")
	case <-timer.C:
		c.Kill()
		return c.startError(p, fmt.Sprintf("not ready after %s (killed)", timeout))
	case <-ctx.Done():
		c.Kill()
		return fmt.Errorf("%s: %w", c.name, ctx.Err())
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit 0"
	}
	return err.Error()
}

// startTail is how many lines of a failed start's output its error shows.
const startTail = 12

// startError is the error of start p that failed as what says (the
// process has ended): the child's name, what happened and the cause — the
// line of its own output that says why (its first "panic:" or "fatal
// error:" line, else its last line) — on the first line, then the log's
// path and the last lines of this process's output. Lines an earlier
// process of the child wrote to the same log are not shown.
func (c *Child) startError(p launched, what string) error {
	lines := startOutput(c.logPath, p.logOff)
	if len(lines) == 0 {
		return fmt.Errorf("%s: %s, without a line of output; log %s", c.name, what, c.logPath)
	}
	cause := lines[len(lines)-1]
	for _, l := range lines {
		if strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ") {
			cause = l
			break
		}
	}
	if len(lines) == 1 {
		return fmt.Errorf("%s: %s: %s (log %s)", c.name, what, cause, c.logPath)
	}
	if len(lines) > startTail {
		lines = lines[len(lines)-startTail:]
	}
	return fmt.Errorf("%s: %s: %s\nits output ends (log %s):\n  %s", c.name, what, cause, c.logPath, strings.Join(lines, "\n  "))
}

// startOutput returns the non-blank lines of the log at path from off on,
// without the supervisor's own "---- " lines (best effort).
func startOutput(path string, off int64) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	if off > 0 && off <= int64(len(b)) {
		b = b[off:]
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimRight(l, "\r \t")
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "---- ") {
			continue
		}
		out = append(out, l)
	}
	return out
}

// Kill SIGKILLs the process group and waits until the process is reaped.
// Killing a child that is not running is harmless.
func (c *Child) Kill() {
	c.signal(syscall.SIGKILL, 0)
}

// Close stops the process like Stop and refuses every later Start (a
// restart racing the lab's teardown).
func (c *Child) Close(grace time.Duration) {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.Stop(grace)
}

// CloseNow is Close without the grace: it refuses every later Start and
// SIGKILLs the process group at once.
func (c *Child) CloseNow() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.Kill()
}

// Stop sends SIGTERM (drain), waits up to grace, then SIGKILLs.
func (c *Child) Stop(grace time.Duration) {
	c.signal(syscall.SIGTERM, grace)
}

func (c *Child) signal(sig syscall.Signal, grace time.Duration) {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	if cmd == nil || cmd.Process == nil || exited == nil {
		c.mu.Unlock()
		return
	}
	select {
	case <-exited:
		c.mu.Unlock()
		return
	default:
	}
	c.expected = true
	pid := cmd.Process.Pid
	c.mu.Unlock()

	// The group (the child leads it: Setpgid), so anything it started too;
	// the pid alone only when there is no such group. Both at once sent
	// the child two SIGTERMs, and a second one, delivered apart from the
	// first, ends a draining gateway or fake model at once (their second
	// interrupt) instead of letting it drain.
	if err := syscall.Kill(-pid, sig); err != nil {
		_ = syscall.Kill(pid, sig)
	}
	if sig != syscall.SIGKILL {
		select {
		case <-exited:
			return
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	<-exited
}

// Up reports whether the process is running and was ready.
func (c *Child) Up() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.up
}

// PID is the current (or last) process id; 0 before the first start.
func (c *Child) PID() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pid
}

// Listen is the traffic address ("127.0.0.1:port").
func (c *Child) Listen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.listen
}

// Admin is the admin address (gateways).
func (c *Child) Admin() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.admin
}

// Name is the child's name ("node-0", "gateway-1").
func (c *Child) Name() string { return c.name }

// LogPath is the child's log file.
func (c *Child) LogPath() string { return c.logPath }

// Starts is how many processes were started.
func (c *Child) Starts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.starts
}

// StartedAt is when the current (or last) process was started, read from
// the lab's clock just before the fork; zero before the first start. It is
// exact where the process's own process_start_time_seconds is not: that
// adds the start's clock ticks to the boot time in whole seconds
// (/proc/stat btime), so it reads up to a second early.
func (c *Child) StartedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.startedAt
}

// setRestart records when a scheduled restart is due (zero clears it).
func (c *Child) setRestart(t time.Time) {
	c.mu.Lock()
	c.restart = t
	c.mu.Unlock()
}

// RestartIn is the time until a scheduled restart, or 0.
func (c *Child) RestartIn(now time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.restart.IsZero() || c.up {
		return 0
	}
	if d := c.restart.Sub(now); d > 0 {
		return d
	}
	return 0
}
