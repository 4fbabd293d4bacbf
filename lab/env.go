package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// adminJSON sends body (JSON) to an admin URL with the lab's token and
// decodes the answer into out (when not nil). A status other than 2xx is an
// error carrying the server's message.
func (l *Lab) adminJSON(ctx context.Context, method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.httpc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: decode: %w", method, url, err)
		}
	}
	return nil
}

// NodeCount is the number of fake model nodes.
func (l *Lab) NodeCount() int { return len(l.nodes) }

func (l *Lab) nodeIndexes(node int) ([]int, error) {
	if node == -1 {
		out := make([]int, len(l.nodes))
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if node < 0 || node >= len(l.nodes) {
		return nil, fmt.Errorf("lab: node %d does not exist (0..%d)", node, len(l.nodes)-1)
	}
	return []int{node}, nil
}

// PatchNodeKnobs sends patch to node i's PUT /admin/knobs (every node for
// -1) and returns the knobs it replaced (of the first node patched), for
// the keys of patch. The lab remembers the patch, so a restarted node comes
// back with it.
func (l *Lab) PatchNodeKnobs(ctx context.Context, node int, patch map[string]any) (map[string]any, error) {
	idx, err := l.nodeIndexes(node)
	if err != nil {
		return nil, err
	}
	var before map[string]any
	var errs []error
	for _, i := range idx {
		c := l.nodes[i]
		url := "http://" + c.Listen() + "/admin/knobs"
		var cur map[string]any
		if c.Up() {
			if err := l.adminJSON(ctx, http.MethodGet, url, nil, &cur); err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", i, err))
				continue
			}
			if err := l.adminJSON(ctx, http.MethodPut, url, patch, nil); err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", i, err))
				continue
			}
		} else {
			// A node that is down gets the patch when it restarts; what
			// it replaces is the knobs it will start with.
			cur = defaultKnobMap()
			l.mu.Lock()
			mergeInto(cur, l.nodeKnobs[i])
			l.mu.Unlock()
		}
		l.mu.Lock()
		mergeInto(l.nodeKnobs[i], patch)
		l.mu.Unlock()
		if before == nil {
			before = map[string]any{}
			for k := range patch {
				if v, ok := cur[k]; ok {
					before[k] = v
				}
			}
		}
	}
	return before, errors.Join(errs...)
}

// KillNode SIGKILLs node i's process.
func (l *Lab) KillNode(ctx context.Context, node int) error {
	idx, err := l.nodeIndexes(node)
	if err != nil {
		return err
	}
	for _, i := range idx {
		c := l.nodes[i]
		pid := c.PID()
		c.Kill()
		l.mu.Lock()
		l.killedAt[i] = time.Now()
		l.mu.Unlock()
		l.event(EventChildExit, c.name, map[string]any{"pid": pid, "status": "killed (SIGKILL)"})
	}
	return nil
}

// RestartNode starts node i again on the same port, with its knobs, and
// waits until it is ready. A node that is up is left alone.
func (l *Lab) RestartNode(ctx context.Context, node int) error {
	idx, err := l.nodeIndexes(node)
	if err != nil {
		return err
	}
	var errs []error
	for _, i := range idx {
		c := l.nodes[i]
		if c.Up() {
			continue
		}
		if err := c.Start(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		c.setRestart(time.Time{})
		l.mu.Lock()
		delete(l.killedAt, i)
		l.mu.Unlock()
		l.event(EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "restart": "node"})
	}
	return errors.Join(errs...)
}

// PatchGatewayPressure sends patch to every running gateway's PUT
// /admin/pressure.
func (l *Lab) PatchGatewayPressure(ctx context.Context, patch map[string]any) error {
	var errs []error
	for _, g := range l.gateways {
		if !g.Up() {
			continue
		}
		if err := l.adminJSON(ctx, http.MethodPut, "http://"+g.Admin()+"/admin/pressure", patch, nil); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}

// SetRateFactor multiplies the target rate (1 = normal).
func (l *Lab) SetRateFactor(f float64) {
	if f <= 0 || f != f {
		f = 1
	}
	l.mu.Lock()
	l.rateFactor = f
	l.mu.Unlock()
}

// SetSlowClients makes a share of stream and export readers slow.
func (l *Lab) SetSlowClients(share, kbps float64) {
	if err := l.gen.SetSlowClients(share, kbps); err != nil {
		l.progress("slow clients: %v", err)
	}
}

// KillRedis kills the lab's Redis child.
func (l *Lab) KillRedis(ctx context.Context) error {
	if l.redis == nil {
		return errors.New("lab: this lab has no Redis child (redis: auto starts one)")
	}
	return l.redis.Kill()
}

// RestartRedis brings the Redis child back on its port.
func (l *Lab) RestartRedis(ctx context.Context) error {
	if l.redis == nil {
		return errors.New("lab: this lab has no Redis child (redis: auto starts one)")
	}
	return l.redis.Restart(ctx)
}

// After runs f after d unless the lab stops first. A node killed within the
// last moment shows d as its time to restart (the usual caller is
// node_kill's restart).
func (l *Lab) After(d time.Duration, f func()) {
	now := time.Now()
	l.mu.Lock()
	if l.envStopped {
		l.mu.Unlock()
		return
	}
	var recent []*child
	for i, at := range l.killedAt {
		if now.Sub(at) < time.Second {
			recent = append(recent, l.nodes[i])
		}
	}
	t := time.AfterFunc(d, func() {
		l.mu.Lock()
		stopped := l.envStopped
		l.mu.Unlock()
		if !stopped {
			f()
		}
	})
	l.timers = append(l.timers, t)
	l.mu.Unlock()
	for _, c := range recent {
		if c.RestartIn(now) == 0 {
			c.setRestart(now.Add(d))
		}
	}
}

// stopEnv cancels every pending After.
func (l *Lab) stopEnv() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.envStopped = true
	for _, t := range l.timers {
		t.Stop()
	}
	l.timers = nil
}
