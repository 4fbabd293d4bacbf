// Package redistest starts real redis-server child processes for tests.
//
// Tests that need Redis call Start, which runs redis-server on a free loopback
// port with persistence off and stops it when the test ends. When
// redis-server is not on PATH the test is skipped with a message saying how
// to install it — unless the environment variable CI is set, where a missing
// redis-server fails the test instead, so CI never passes by skipping.
package redistest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Binary is the redis-server executable Start looks up on PATH.
const Binary = "redis-server"

// startAttempts bounds how many free ports Start tries when another process
// takes the chosen port between probing and binding.
const startAttempts = 5

// readyTimeout bounds the wait for the first PONG.
const readyTimeout = 10 * time.Second

// Server is one redis-server child process. Its port stays the same across
// Kill and Restart, so clients can reconnect to URL after a restart.
// Methods are safe for concurrent use.
type Server struct {
	t    testing.TB
	bin  string
	dir  string // working directory for redis (no files are written to it)
	port int    // fixed for the Server's life

	mu   sync.Mutex
	cmd  *exec.Cmd     // nil while killed; guarded by mu
	done chan struct{} // closed when cmd has exited; guarded by mu
	log  *syncBuffer   // output of the current process; guarded by mu
}

// Start runs redis-server on a free loopback port and waits until it answers
// PING. The server is killed when the test ends. See the package comment for
// what happens when redis-server is missing.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath(Binary)
	if err != nil {
		msg := fmt.Sprintf("redistest: %s not found on PATH (install it, e.g. `apt-get install -y redis-server`): %v", Binary, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg + " — CI is set, so a missing redis-server is a failure, not a skip")
		}
		t.Skip(msg)
	}
	s := &Server{t: t, bin: bin, dir: t.TempDir()}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("redistest: pick a free port: %v", err)
		}
		s.port = port
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.Kill)
			return s
		}
	}
	t.Fatalf("redistest: start redis-server after %d attempts: %v", startAttempts, lastErr)
	return nil
}

// Addr is the server's host:port on loopback.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is a redis:// URL for the server, usable with go-redis ParseURL.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// Running reports whether the child process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Kill SIGKILLs the server (paused or not) and waits for it to exit. Killing a stopped server does nothing. All data is lost: there is
// no persistence.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// Restart starts the server again on the same port (after Kill) and waits
// for PING. It fails the test when the server cannot come back.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	// The old socket may linger for a moment; redis sets SO_REUSEADDR, so a
	// few short retries cover the rare collision.
	for attempt := 0; attempt < startAttempts; attempt++ {
		if err = s.start(); err == nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Fatalf("redistest: restart redis-server on port %d: %v", s.port, err)
}

// Pause sends SIGSTOP: the server keeps its connections but answers nothing,
// which is what a hung or overloaded Redis looks like to a client. Resume
// undoes it. Kill works on a paused server too.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused server.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig os.Signal) {
	s.t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		s.t.Fatalf("redistest: signal %v: server is not running", sig)
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Log is what the current redis-server process has printed (warnings only).
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		return ""
	}
	return s.log.String()
}

// start runs one redis-server process on s.port and waits for PING.
func (s *Server) start() error {
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
		"--logfile", "",
		"--loglevel", "warning",
	)
	log := &syncBuffer{}
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	if err := waitPing(s.Addr(), done, readyTimeout); err != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return fmt.Errorf("redis-server on port %d: %w; its output: %s", s.port, err, strings.TrimSpace(log.String()))
	}
	s.mu.Lock()
	s.cmd, s.done, s.log = cmd, done, log
	s.mu.Unlock()
	return nil
}

// Ping sends PING to addr over a raw connection and reports whether the
// answer was PONG within timeout.
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
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// waitPing polls addr until it answers PONG, the process exits, or timeout.
func waitPing(addr string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return errors.New("exited before answering PING")
		default:
		}
		if err = Ping(addr, 200*time.Millisecond); err == nil {
			return nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within %v: %w", timeout, err)
}

// freePort asks the kernel for a free loopback port. Another process may take
// it before redis binds it; callers retry.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a child's
// stdout and stderr.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer // guarded by mu
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 64<<10 { // keep memory bounded; the first lines matter most
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
