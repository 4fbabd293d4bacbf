package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/levee-lab/levee/internal/redisproc"
)

func init() {
	register(command{
		name:    "redis",
		summary: "run the embedded Redis-protocol server (runs Levee's Lua scripts; for machines without redis-server)",
		run:     runRedis,
	})
}

func runRedis(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("redis", "redis [--listen ADDR]", stderr)
	listen := fs.String("listen", "127.0.0.1:0", "loopback `address` to serve on (port 0 picks a free port)")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "levee redis: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	host, _, err := net.SplitHostPort(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "levee redis: --listen %q: %v\n", *listen, err)
		return 2
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "levee redis: --listen %q: the embedded server has no authentication; listen on a loopback address (127.0.0.1:PORT)\n", *listen)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := redisproc.Serve(ctx, *listen, stdout); err != nil {
		fmt.Fprintf(stderr, "levee redis: %v\n", err)
		return 1
	}
	return 0
}
