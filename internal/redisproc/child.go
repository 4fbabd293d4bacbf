package redisproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// start runs one child on r.port (0: the embedded child picks one and r.port
// learns it from the ready line) and waits for PING.
func (r *Process) start(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, readyTimeout)
		defer cancel()
	}
	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	cmd := r.command(r.port)
	cmd.Stderr = logFile
	// The embedded child tells its address on stdout: read it through a
	// pipe (copied on to the log); redis-server's stdout is its log.
	var stdout *os.File
	if r.kind == KindEmbedded {
		pr, pw, err := os.Pipe()
		if err != nil {
			logFile.Close()
			return fmt.Errorf("stdout pipe: %w", err)
		}
		cmd.Stdout, stdout = pw, pr
		// The child holds its own copy once started; ours is closed right
		// after the start, so that the reader sees EOF when the child exits.
	} else {
		cmd.Stdout = logFile
	}
	err = r.starter(cmd)
	if w, ok := cmd.Stdout.(*os.File); ok && stdout != nil {
		w.Close()
	}
	if err != nil {
		logFile.Close()
		if stdout != nil {
			stdout.Close()
		}
		return fmt.Errorf("start %s: %w", r.bin, err)
	}
	ready := make(chan string, 1)
	copied := make(chan struct{})
	if stdout != nil {
		go func() {
			defer close(copied)
			defer stdout.Close()
			copyReady(stdout, logFile, ready)
		}()
	} else {
		close(copied)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		<-copied // EOF: the child's end of the pipe closed with it
		close(exited)
	}()
	fail := func(err error) error {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		logFile.Close()
		return fmt.Errorf("%s on port %d: %w%s", r.kind, r.port, err, redisLogTail(r.logPath))
	}
	if stdout != nil {
		select {
		case addr := <-ready:
			port, err := readyPort(addr, r.port)
			if err != nil {
				return fail(err)
			}
			if r.port == 0 {
				// The first start, before any caller holds r. A restart
				// keeps the port (readyPort checked it) and must not write
				// it: Addr and URL read it without a lock.
				r.port = port
			}
		case <-exited:
			return fail(errors.New("exited before printing its ready line"))
		case <-ctx.Done():
			return fail(fmt.Errorf("no ready line: %w", ctx.Err()))
		}
	}
	if err := waitPing(ctx, r.Addr(), exited); err != nil {
		return fail(err)
	}
	if r.kind == KindServer {
		// The PONG may be another server's on the same port (one that
		// took it while this child was down, or between the pick and the
		// bind): this child then failed to bind and is exiting. (The
		// embedded child printed its address once it had bound it.)
		if err := checkOwner(r.Addr(), cmd.Process.Pid); err != nil {
			return fail(err)
		}
	}
	r.mu.Lock()
	r.cmd, r.exited, r.logFile = cmd, exited, logFile
	r.mu.Unlock()
	return nil
}

// copyReady copies the child's stdout lines to log and sends the listen
// address of the first ready line on ready.
func copyReady(stdout io.Reader, log io.Writer, ready chan<- string) {
	br := bufio.NewReader(stdout)
	sent := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if !sent {
				if addr, ok := ParseReadyLine(line); ok {
					ready <- addr
					sent = true
				}
			}
			_, _ = log.Write(line)
		}
		if err != nil {
			return
		}
	}
}

// readyPort checks the address of a ready line: loopback, and on want when
// want is not 0.
func readyPort(addr string, want int) (int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, fmt.Errorf("ready line address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 {
		return 0, fmt.Errorf("ready line address %q: bad port", addr)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return 0, fmt.Errorf("ready line address %q is not loopback", addr)
	}
	if want != 0 && port != want {
		return 0, fmt.Errorf("ready line address %q, want port %d", addr, want)
	}
	return port, nil
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
	// RESP, not the inline form: the embedded server reads only RESP.
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
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

// checkOwner makes sure the Redis answering on addr is the child pid (or
// a process of its group, should redis-server be a wrapper that forks):
// INFO server names the process_id.
func checkOwner(addr string, pid int) error {
	got, err := serverPID(addr, time.Second)
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	if got == pid {
		return nil
	}
	if pg, err := syscall.Getpgid(got); err == nil && pg == pid {
		return nil
	}
	return fmt.Errorf("port taken: it answers as pid %d, another process, not this child (pid %d)", got, pid)
}

// serverPID asks the Redis on addr for its process_id (INFO server).
func serverPID(addr string, timeout time.Duration) (int, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := c.Write([]byte("*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n")); err != nil {
		return 0, err
	}
	br := bufio.NewReader(c)
	head, err := br.ReadString('\n')
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return 0, fmt.Errorf("answered %q, want a bulk string", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("no process_id in its answer")
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
