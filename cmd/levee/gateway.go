package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/levee-lab/levee/gateway"
	"github.com/levee-lab/levee/gateway/ratelimit"
	"github.com/levee-lab/levee/internal/wire"
)

func init() {
	register(command{
		name:    "gateway",
		summary: "run the AI gateway (the defense chain) in front of model nodes",
		run:     runGateway,
	})
}

func runGateway(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("gateway", "gateway --config FILE [flags]", stderr)
	configPath := fs.String("config", "", "gateway YAML config `file` (required; see gateway/testdata/example.yaml)")
	listen := fs.String("listen", "", "traffic `address`, overrides the config's listen (127.0.0.1:0 picks a free port)")
	admin := fs.String("admin", "", "admin API `address`, overrides the config's admin")
	token := fs.String("admin-token", "", "admin bearer `token` (else env LEVEE_ADMIN_TOKEN, the config's admin_token, or a generated one printed on stderr)")
	logLevel := fs.String("log-level", "info", "stderr log `level`: debug, info, warn, error")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "levee gateway: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *configPath == "" {
		fmt.Fprintln(stderr, "levee gateway: --config FILE is required")
		fs.Usage()
		return 2
	}
	for _, a := range []struct{ flag, value string }{{"--listen", *listen}, {"--admin", *admin}} {
		if err := checkListenAddr(a.value); a.value != "" && err != nil {
			fmt.Fprintf(stderr, "levee gateway: %s %q: %v\n", a.flag, a.value, err)
			return 2
		}
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "levee gateway: --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	ratelimit.RedisClientLog(log) // go-redis's lines as the gateway's debug lines

	cfg, err := gateway.LoadConfig(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "levee gateway: %v\n", err)
		return 1
	}
	if *listen != "" {
		cfg.Listen = *listen
	}
	if *admin != "" {
		cfg.Admin = *admin
	}
	tok, err := adminToken(stderr, *token, cfg.AdminToken)
	if err != nil {
		fmt.Fprintf(stderr, "levee gateway: %v\n", err)
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	srv, err := gateway.Start(context.Background(), cfg, tok, gateway.WithLogger(log))
	if err != nil {
		fmt.Fprintf(stderr, "levee gateway: %v\n", err)
		return 1
	}
	ready := wire.Ready{Kind: wire.KindGateway, Listen: srv.Addr(), Admin: srv.AdminAddr(), PID: os.Getpid()}
	fmt.Fprintf(stdout, "%s\n", ready.Line())
	log.Info("gateway ready", "listen", srv.Addr(), "admin", srv.AdminAddr(), "nodes", len(cfg.Upstream.Nodes))

	code := 0
	select {
	case <-ctx.Done():
		// A second signal while draining kills at once (the default
		// action, back once the first one was taken).
		stop()
		log.Info("gateway draining (a second signal stops it at once)", "timeout", cfg.DrainTimeout, "delay", cfg.DrainDelay)
	case err := <-srv.Err():
		log.Error("gateway listener failed", "err", err)
		code = 1
	}
	dctx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	if err := srv.Shutdown(dctx); err != nil {
		log.Warn("gateway drain incomplete", "err", err)
	}
	log.Info("gateway stopped")
	return code
}

// checkListenAddr reports what is wrong with a host:port to listen on: no
// port, or one that is not a number from 0 to 65535 (0 picks a free port).
// Whether the host may be used (the admin API's loopback rule) is the
// config's to judge.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port, e.g. 127.0.0.1:0 for a free port: %w", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("want a port from 0 to 65535, got %q", port)
	}
	return nil
}
