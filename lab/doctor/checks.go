package doctor

import (
	"fmt"
	"net"
	"strings"
)

// Terminal sizes: the dashboard works from 80×24 (panels fold into pages)
// and shows every panel at once from 160×48.
const (
	MinWidth, MinHeight     = 80, 24
	IdealWidth, IdealHeight = 160, 48
)

func checkTerminal(env *Env) Result {
	w, h, err := env.TermSize()
	if err != nil {
		return Result{Status: Warn,
			Found: "not run in a terminal, so its size is unknown",
			Fix:   "run levee doctor in the terminal window you will use for the dashboard"}
	}
	size := fmt.Sprintf("%d×%d", w, h)
	switch {
	case w < MinWidth || h < MinHeight:
		return Result{Status: Fail,
			Found: size + ": too small for the dashboard",
			Fix:   fmt.Sprintf("make the window larger or the font smaller (Ctrl −) until it is at least %d×%d; %d×%d shows every panel at once", MinWidth, MinHeight, IdealWidth, IdealHeight)}
	case w < IdealWidth || h < IdealHeight:
		return Result{Status: Warn,
			Found: size + ": enough; the dashboard folds its panels into pages",
			Fix:   fmt.Sprintf("for every panel at once make it %d×%d (full screen, or a smaller font)", IdealWidth, IdealHeight)}
	}
	return Result{Found: size + ": every panel fits"}
}

func checkColours(env *Env) Result {
	term, colorterm := env.Getenv("TERM"), strings.ToLower(env.Getenv("COLORTERM"))
	switch {
	case term == "" || term == "dumb":
		return Result{Status: Fail,
			Found: fmt.Sprintf("TERM=%q: the dashboard cannot draw in this terminal", term),
			Fix:   "use a terminal emulator (Terminal, iTerm2, GNOME Terminal, Windows Terminal …) with TERM=xterm-256color"}
	case env.Getenv("NO_COLOR") != "":
		return Result{Status: Warn,
			Found: "NO_COLOR is set: the dashboard shows levels as words and a chart's lines dashed, without colour",
			Fix:   "unset NO_COLOR to see green/yellow/red levels"}
	case colorterm == "truecolor" || colorterm == "24bit":
		return Result{Found: "24-bit colour (COLORTERM=" + colorterm + ")"}
	case strings.Contains(term, "256color"):
		return Result{Found: "256 colours (TERM=" + term + ")"}
	}
	return Result{Status: Warn,
		Found: "16 colours at most (TERM=" + term + ")",
		Fix:   "export TERM=xterm-256color (in tmux: set -g default-terminal tmux-256color)"}
}

// loopbackPorts is how many loopback ports the check holds at once: a lab
// with 3 nodes and 3 gateways listens on about a dozen, Redis included.
const loopbackPorts = 32

// gatewayPort is `levee gateway`'s default listen port.
const gatewayPort = "127.0.0.1:8080"

func checkLoopback(env *Env) Result {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for i := 0; i < loopbackPorts; i++ {
		l, err := env.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Result{Status: Fail,
				Found: fmt.Sprintf("could open only %d of %d loopback ports: %v", i, loopbackPorts, err),
				Fix:   "every part of the lab is a process on 127.0.0.1: allow loopback connections (firewall, VPN client, sandbox rules) and close programs holding many sockets"}
		}
		held = append(held, l)
	}
	found := fmt.Sprintf("opened %d ports on 127.0.0.1", loopbackPorts)
	l, err := env.Listen("tcp", gatewayPort)
	if err != nil {
		return Result{Status: Warn,
			Found: found + "; but " + gatewayPort + " (levee gateway's default) is taken",
			Fix:   "the lab picks free ports itself; for levee gateway alone, free 8080 or give --listen 127.0.0.1:8081"}
	}
	l.Close()
	return Result{Found: found + " and " + gatewayPort}
}

func checkCPU(env *Env) Result {
	n := env.NumCPU
	if n < 2 {
		return Result{Status: Warn,
			Found: fmt.Sprintf("%d CPU core: the load generator, the gateway and the model nodes share it", n),
			Fix:   "use a machine with 2 cores or more, or expect lower numbers than the reference runs (run lessons with --quick)"}
	}
	return Result{Found: fmt.Sprintf("%d cores", n)}
}

// Load per core above which the lab's own numbers suffer.
const (
	loadWarn = 0.5
	loadFail = 1.0
)

func checkLoad(env *Env) Result {
	la, err := env.LoadAvg()
	if err != nil {
		return Result{Status: Warn,
			Found: "cannot read the load average: " + err.Error(),
			Fix:   "check by hand that nothing else keeps the CPU busy (top)"}
	}
	n := max(env.NumCPU, 1)
	per := la[0] / float64(n)
	found := fmt.Sprintf("load %.2f on %d core%s over the last minute (%.2f per core)", la[0], n, plural(n), per)
	switch {
	case per > loadFail:
		return Result{Status: Fail,
			Found: found + ": other programs keep the CPU busy",
			Fix:   "close busy programs (video calls, browser tabs, builds, indexers, other labs) and run levee doctor again: the lab measures real latency, and a busy CPU shows up as lag the lesson did not cause"}
	case per > loadWarn:
		return Result{Status: Warn,
			Found: found,
			Fix:   "close what you can: the lessons' numbers are measured, and a busy machine moves them"}
	}
	return Result{Found: found}
}

// Memory the lab needs: a gateway may grow to its pod limit (512 MB by
// default, 256 MB in the lessons) before it is OOM-killed, beside the
// nodes, the load generator and Redis.
const (
	memFail = 512 << 20
	memWarn = 1 << 30
)

func checkMemory(env *Env) Result {
	avail, err := env.MemAvailable()
	if err != nil {
		return Result{Status: Warn,
			Found: "cannot read the free memory: " + err.Error(),
			Fix:   "check by hand that about 1 GiB is free (free -h)"}
	}
	found := fmt.Sprintf("%s available", bytesText(avail))
	switch {
	case avail < memFail:
		return Result{Status: Fail,
			Found: found + ": the lab needs about 1 GiB",
			Fix:   "close programs to free memory: a gateway may grow to its 512 MB pod limit before the lab OOM-kills it"}
	case avail < memWarn:
		return Result{Status: Warn,
			Found: found + ": tight",
			Fix:   "free some memory (about 1 GiB available is comfortable)"}
	}
	return Result{Found: found}
}

func checkOpenFiles(env *Env) Result {
	limit, err := env.OpenFiles()
	if err != nil {
		return Result{Status: Warn,
			Found: "cannot read the open-file limit: " + err.Error(),
			Fix:   fmt.Sprintf("check with ulimit -n that it is at least %d", env.NeedFiles)}
	}
	if limit < uint64(env.NeedFiles) {
		return Result{Status: Fail,
			Found: fmt.Sprintf("open-file limit %d: an overload lesson holds up to %d sockets in one process", limit, env.NeedFiles),
			Fix:   "raise it in the shell that starts levee: ulimit -n 65536 (if that is refused, raise the hard limit: /etc/security/limits.conf, or docker run --ulimit nofile=65536)"}
	}
	return Result{Found: fmt.Sprintf("open-file limit %d (the lessons need up to %d)", limit, env.NeedFiles)}
}

func checkRunsDir(env *Env) Result {
	where, err := env.WriteProbe(env.RunsDir)
	if err != nil {
		return Result{Status: Fail,
			Found: fmt.Sprintf("cannot write runs to %s: %v", env.RunsDir, err),
			Fix:   "run levee from a folder you can write to, or give levee run --runs DIR (and levee doctor --runs DIR) a writable folder"}
	}
	if where != env.RunsDir {
		return Result{Found: fmt.Sprintf("%s does not exist yet; it will be created in %s (writable)", env.RunsDir, where)}
	}
	return Result{Found: env.RunsDir + " is writable"}
}

func checkRedis(env *Env) Result {
	if p, err := env.LookPath("redis-server"); err == nil {
		return Result{Found: "redis-server at " + p + " (for lessons 06, 06b)"}
	}
	if env.HasCommand != nil && env.HasCommand("redis") {
		// Ready, with a warning: the embedded server plays one Redis (lesson
		// 06), not a Redis Cluster of redis-server children (06b).
		return Result{Status: Warn,
			Found: "no redis-server; this levee carries an embedded one (levee redis) and uses it for lesson 06, but lesson 06b (a Redis Cluster) cannot start without redis-server",
			Fix:   "for lesson 06b: sudo apt-get install -y redis-server (macOS: brew install redis)"}
	}
	return Result{Status: Warn,
		Found: "redis-server not found: lesson 06 then keeps a separate limit in each gateway and cannot show one limit shared through Redis, and lesson 06b (a Redis Cluster) cannot start",
		Fix:   "install it: sudo apt-get install -y redis-server (macOS: brew install redis); levee builds with an embedded Redis (levee redis) use that when it is missing"}
}

func checkGo(env *Env) Result {
	exe, err := env.Executable()
	if err == nil && strings.Contains(exe, "go-build") {
		return Result{Status: Warn,
			Found: "running through go run: every start compiles levee first",
			Fix:   "build it once before the workshop: go build -o levee ./cmd/levee, then run ./levee"}
	}
	if p, err := env.LookPath("go"); err == nil {
		return Result{Found: "not needed to run this binary (go at " + p + " can rebuild it)"}
	}
	return Result{Found: "not needed: this binary runs on its own"}
}

func checkTmux(env *Env) Result {
	if p, err := env.LookPath("tmux"); err == nil {
		return Result{Found: "tmux at " + p + " (optional: share or script the dashboard)"}
	}
	return Result{Found: "not installed (optional)"}
}

// bytesText is a size for people: "1.5 GiB", "640 MiB".
func bytesText(b uint64) string {
	const gib = 1 << 30
	if b >= gib {
		return fmt.Sprintf("%.1f GiB", float64(b)/gib)
	}
	return fmt.Sprintf("%d MiB", b>>20)
}
