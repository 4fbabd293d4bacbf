package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/levee-lab/levee/internal/redisproc"
	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// Config is what a Supervisor starts and how it keeps it running.
type Config struct {
	// Executable is the levee binary re-executed for every node and gateway.
	Executable string
	// Token is every child's admin token (LEVEE_ADMIN_TOKEN), sent as a
	// Bearer token on admin calls.
	Token string
	// LogsDir holds each child's log; WorkDir the gateways' config files.
	LogsDir, WorkDir string
	// ReadyTimeout bounds each child's start.
	ReadyTimeout time.Duration

	// Nodes is the number of fake model processes (one node each), started
	// with NodeKnobs.
	Nodes     int
	NodeKnobs map[string]any
	// NodeMaxTokens is each node's --max-tokens; 0 leaves the flag out
	// (the fake model's default).
	NodeMaxTokens int
	// Gateways is the number of gateway processes. GatewayConfig returns a
	// gateway's YAML config for its listeners ("127.0.0.1:0" at the first
	// start, the same ports on a restart), the nodes' addresses and the
	// Redis URL ("" without Redis); it is called at every start, so a
	// restarted gateway gets the switches in force then.
	Gateways      int
	GatewayConfig func(listen, admin string, nodes []string, redisURL string) ([]byte, error)
	// MemoryLimit is a gateway's pod memory limit in bytes: at this RSS it
	// is SIGKILLed (an OOM kill) and restarted after RestartDelay. 0: none.
	MemoryLimit  uint64
	RestartDelay time.Duration
	// Redis is the experiment's `redis:`: off, a server child (auto,
	// server, embedded), a cluster, or an external URL. Start fails when
	// it asks for Redis the lab cannot start.
	Redis experiment.RedisSpec

	// Event records a lifecycle event (runfiles.Event… kinds); Progress
	// prints a human line, and Failure one that reports a failure (a
	// restart or an admin call that did not work), so the reader can tell
	// it from the rest without parsing words. Any may be nil; a nil
	// Failure prints through Progress.
	Event    func(kind, detail string, fields map[string]any)
	Progress func(format string, args ...any)
	Failure  func(format string, args ...any)
}

// Supervisor owns the lab's child processes: it starts Redis, the model
// nodes and the gateways, restarts a gateway that dies (a crash, an OOM kill
// at its memory limit), kills and restarts nodes on request, and talks to
// every child's admin API. All methods are safe for concurrent use.
type Supervisor struct {
	cfg      Config
	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	httpc    *http.Client
	nodes    []*Child // fixed after Start
	gateways []*Child // fixed after Start
	// Redis, fixed after Start: one server child, a cluster, or neither.
	redis     *RedisChild
	cluster   *redisproc.Cluster
	redisInfo RedisInfo

	quiet     chan struct{} // closed by StopWatching: no more restarts or OOM kills
	quietOnce sync.Once

	mu sync.Mutex
	// guarded by mu:
	knobs    []map[string]any // per node: start knobs + patches since
	gwRSS    []uint64         // last VmRSS per gateway
	gwPeak   []uint64         // largest VmRSS per gateway read since TakeRSSPeak last reset it (the reading that OOM-killed it included)
	oomKills int
	restarts int // gateway restarts
	killedAt map[int]time.Time
}

// Start starts Redis (when asked), the nodes, then the gateways, and
// returns once every child printed its ready line. On error it stops what
// it started; when ctx ended (a caller that gave up on the start: a kill
// or quit while the lab opens), it SIGKILLs them at once (Kill) rather
// than wait out each child's grace.
func Start(ctx context.Context, cfg Config) (*Supervisor, error) {
	s := &Supervisor{
		cfg:      cfg,
		httpc:    &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second, DisableCompression: true}},
		quiet:    make(chan struct{}),
		killedAt: map[int]time.Time{},
		gwRSS:    make([]uint64, cfg.Gateways),
		gwPeak:   make([]uint64, cfg.Gateways),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.start(ctx); err != nil {
		if ctx.Err() != nil {
			s.Kill()
		}
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Supervisor) event(kind, detail string, fields map[string]any) {
	if s.cfg.Event != nil {
		s.cfg.Event(kind, detail, fields)
	}
}

func (s *Supervisor) progress(format string, args ...any) {
	if s.cfg.Progress != nil {
		s.cfg.Progress(format, args...)
	}
}

func (s *Supervisor) failure(format string, args ...any) {
	if s.cfg.Failure != nil {
		s.cfg.Failure(format, args...)
		return
	}
	s.progress(format, args...)
}

func (s *Supervisor) start(ctx context.Context) error {
	if err := s.startRedis(ctx); err != nil {
		return err
	}
	s.progress("starting %d model node(s) and %d gateway(s)…", s.cfg.Nodes, s.cfg.Gateways)
	s.knobs = make([]map[string]any, s.cfg.Nodes)
	for i := range s.cfg.Nodes {
		s.knobs[i] = cloneKnobs(s.cfg.NodeKnobs)
		s.nodes = append(s.nodes, s.newChild("node", i, s.nodeArgs))
	}
	if err := startAll(ctx, s.nodes); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, c := range s.nodes {
		s.event(runfiles.EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen()})
	}
	for i := range s.cfg.Gateways {
		s.gateways = append(s.gateways, s.newChild("gateway", i, s.gatewayArgs))
	}
	if err := startAll(ctx, s.gateways); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, c := range s.gateways {
		s.event(runfiles.EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "admin": c.Admin()})
		go s.watchMemory(c)
	}
	return nil
}

func (s *Supervisor) newChild(kind string, i int, args func(int, string, string) []string) *Child {
	name := fmt.Sprintf("%s-%d", kind, i)
	return &Child{
		name: name, kind: kind, index: i, exe: s.cfg.Executable,
		logPath:      filepath.Join(s.cfg.LogsDir, name+".log"),
		env:          []string{wire.EnvAdminToken + "=" + s.cfg.Token},
		readyTimeout: s.cfg.ReadyTimeout,
		onExit:       s.childExited,
		args:         args,
	}
}

// startAll starts children concurrently and returns every error.
func startAll(ctx context.Context, cs []*Child) error {
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() { errs[i] = c.Start(ctx) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// nodeArgs: one node per process, knobs as a JSON patch so that a restarted
// node comes back with the knobs it had.
func (s *Supervisor) nodeArgs(index int, listen, _ string) []string {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	s.mu.Lock()
	knobs, _ := json.Marshal(s.knobs[index])
	s.mu.Unlock()
	args := []string{"fakemodel", "--nodes", "1", "--listen", listen, "--knobs", string(knobs)}
	if s.cfg.NodeMaxTokens > 0 {
		args = append(args, "--max-tokens", strconv.Itoa(s.cfg.NodeMaxTokens))
	}
	return args
}

// gatewayArgs writes the gateway's config (current switches, same ports on
// a restart) and returns its arguments.
func (s *Supervisor) gatewayArgs(index int, listen, admin string) []string {
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if admin == "" {
		admin = "127.0.0.1:0"
	}
	path := filepath.Join(s.cfg.WorkDir, fmt.Sprintf("gateway-%d.yaml", index))
	b, err := s.cfg.GatewayConfig(listen, admin, s.NodeAddrs(), s.redisInfo.URL)
	if err != nil {
		// Validated with the experiment; a failure here shows in the child's log.
		b = []byte("# " + strings.ReplaceAll(err.Error(), "\n", " ") + "\n")
	}
	_ = os.WriteFile(path, b, 0o600) // it holds the admin token
	_ = os.Chmod(path, 0o600)        // even when an older file was laxer
	return []string{"gateway", "--config", path}
}

// NodeAddrs are the nodes' traffic addresses, in order.
func (s *Supervisor) NodeAddrs() []string {
	out := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.Listen()
	}
	return out
}

// Nodes and Gateways are the children, in order; the slices are fixed
// after Start and must not be modified.
func (s *Supervisor) Nodes() []*Child    { return s.nodes }
func (s *Supervisor) Gateways() []*Child { return s.gateways }

// HasRedisChild reports whether the lab runs its own Redis server child
// (the one a redis_outage fault kills); a cluster, an external Redis or
// none is not one.
func (s *Supervisor) HasRedisChild() bool { return s.redis != nil }

// HasRedisCluster reports whether the lab runs a Redis Cluster (whose
// masters a redis_master_kill fault kills).
func (s *Supervisor) HasRedisCluster() bool { return s.cluster != nil }

// Counters are the supervisor's running totals.
type Counters struct {
	OOMKills int     // gateways killed at their memory limit
	Restarts int     // gateway restarts, for any reason
	RSSBytes float64 // the gateways' last VmRSS, summed (not comparable with MemoryLimit; per gateway: TakeRSSPeak)
}

// Counters returns the running totals.
func (s *Supervisor) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := Counters{OOMKills: s.oomKills, Restarts: s.restarts}
	for _, r := range s.gwRSS {
		c.RSSBytes += float64(r)
	}
	return c
}

// TakeRSSPeak returns the largest VmRSS any one gateway reached since
// the last call (or the start): the readings between two samples, the
// one that OOM-killed a gateway included, which Counters' last reading
// misses (a killed gateway reads 0 at once). It then starts the next
// interval from each gateway's last reading.
func (s *Supervisor) TakeRSSPeak() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	peak := uint64(0)
	for i := range s.gwPeak {
		peak = max(peak, s.gwPeak[i], s.gwRSS[i])
		s.gwPeak[i] = s.gwRSS[i]
	}
	return float64(peak)
}

// ChildPIDs lists the current process id of every child.
func (s *Supervisor) ChildPIDs() map[string]int {
	m := map[string]int{}
	for _, c := range append(append([]*Child(nil), s.nodes...), s.gateways...) {
		m[c.name] = c.PID()
	}
	s.redisPIDs(m)
	return m
}

// StopWatching ends restarts and OOM kills: a child that exits from now on
// stays down (the lab is finishing).
func (s *Supervisor) StopWatching() { s.quietOnce.Do(func() { close(s.quiet) }) }

func (s *Supervisor) watching() bool {
	select {
	case <-s.quiet:
		return false
	default:
		return true
	}
}

// Close stops every child: gateways first (they drain), then nodes, then
// Redis. No child starts again afterwards.
func (s *Supervisor) Close() {
	s.StopWatching()
	var wg sync.WaitGroup
	for _, g := range s.gateways {
		wg.Go(func() { g.Close(3 * time.Second) })
	}
	wg.Wait()
	for _, n := range s.nodes {
		wg.Go(func() { n.Close(2 * time.Second) })
	}
	wg.Wait()
	s.closeRedis()
	s.cancel()
}

// Kill ends every child at once, for a user who will not wait for Close
// (a second interrupt): restarts stop, and every child's process group —
// gateways, nodes, the Redis server or cluster — is SIGKILLed together
// and reaped before Kill returns. No child starts again afterwards. A
// Close running meanwhile finds its children gone and returns.
func (s *Supervisor) Kill() {
	s.StopWatching()
	var wg sync.WaitGroup
	for _, c := range append(append([]*Child(nil), s.gateways...), s.nodes...) {
		wg.Go(c.CloseNow)
	}
	if s.redis != nil {
		wg.Go(func() { _ = s.redis.Kill() })
	}
	if s.cluster != nil {
		wg.Go(s.cluster.Kill)
	}
	wg.Wait()
}

func cloneKnobs(m map[string]any) map[string]any {
	c := map[string]any{}
	if m == nil {
		// Unmarshaling the "null" a nil map marshals to would set c to
		// nil, and the first knob patch would then panic merging into it.
		return c
	}
	b, _ := json.Marshal(m)
	_ = json.Unmarshal(b, &c)
	return c
}
