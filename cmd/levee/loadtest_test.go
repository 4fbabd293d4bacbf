package main

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
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
