package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/levee-lab/levee/internal/wire"
	"github.com/levee-lab/levee/lab/experiment"
	"github.com/levee-lab/levee/lab/runfiles"
)

// adminJSON sends body (JSON) to an admin URL with the lab's token and
// decodes the answer into out (when not nil). A status other than 2xx is an
// error carrying the server's message.
func (s *Supervisor) adminJSON(ctx context.Context, method, url string, body, out any) error {
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
	req.Header.Set("Authorization", "Bearer "+s.cfg.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.httpc.Do(req)
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
func (s *Supervisor) NodeCount() int { return len(s.nodes) }

func (s *Supervisor) nodeIndexes(node int) ([]int, error) {
	if node == -1 {
		out := make([]int, len(s.nodes))
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if node < 0 || node >= len(s.nodes) {
		return nil, fmt.Errorf("lab: node %d does not exist (0..%d)", node, len(s.nodes)-1)
	}
	return []int{node}, nil
}

// PatchNodeKnobs sends patch to node i's PUT /admin/knobs (every node for
// -1) and returns the knobs it replaced (of the first node patched), for
// the keys of patch. The lab remembers the patch, so a restarted node comes
// back with it.
func (s *Supervisor) PatchNodeKnobs(ctx context.Context, node int, patch map[string]any) (map[string]any, error) {
	idx, err := s.nodeIndexes(node)
	if err != nil {
		return nil, err
	}
	var before map[string]any
	var errs []error
	for _, i := range idx {
		c := s.nodes[i]
		url := "http://" + c.Listen() + wire.PathAdminKnobs
		var cur map[string]any
		if c.Up() {
			if err := s.adminJSON(ctx, http.MethodGet, url, nil, &cur); err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", i, err))
				continue
			}
			if err := s.adminJSON(ctx, http.MethodPut, url, patch, nil); err != nil {
				errs = append(errs, fmt.Errorf("node %d: %w", i, err))
				continue
			}
		} else {
			// A node that is down gets the patch when it restarts; what
			// it replaces is the knobs it will start with.
			cur = experiment.DefaultKnobMap()
			s.mu.Lock()
			experiment.MergeInto(cur, s.knobs[i])
			s.mu.Unlock()
		}
		s.mu.Lock()
		experiment.MergeInto(s.knobs[i], patch)
		s.mu.Unlock()
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
func (s *Supervisor) KillNode(ctx context.Context, node int) error {
	idx, err := s.nodeIndexes(node)
	if err != nil {
		return err
	}
	for _, i := range idx {
		c := s.nodes[i]
		pid := c.PID()
		c.Kill()
		s.mu.Lock()
		s.killedAt[i] = time.Now()
		s.mu.Unlock()
		s.event(runfiles.EventChildExit, c.name, map[string]any{"pid": pid, "status": "killed (SIGKILL)"})
	}
	return nil
}

// RestartNode starts node i again on the same port, with its knobs, and
// waits until it is ready. A node that is up is left alone.
func (s *Supervisor) RestartNode(ctx context.Context, node int) error {
	idx, err := s.nodeIndexes(node)
	if err != nil {
		return err
	}
	var errs []error
	for _, i := range idx {
		c := s.nodes[i]
		if c.Up() {
			continue
		}
		if err := c.Start(ctx); err != nil {
			errs = append(errs, err)
			continue
		}
		c.setRestart(time.Time{})
		s.mu.Lock()
		delete(s.killedAt, i)
		s.mu.Unlock()
		s.event(runfiles.EventChildStart, c.name, map[string]any{"pid": c.PID(), "listen": c.Listen(), "restart": "node"})
	}
	return errors.Join(errs...)
}

// PatchGatewayPressure sends patch to every running gateway's PUT
// /admin/pressure.
func (s *Supervisor) PatchGatewayPressure(ctx context.Context, patch map[string]any) error {
	var errs []error
	for _, g := range s.gateways {
		if !g.Up() {
			continue
		}
		if err := s.adminJSON(ctx, http.MethodPut, "http://"+g.Admin()+wire.PathAdminPressure, patch, nil); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.name, err))
		}
	}
	return errors.Join(errs...)
}

// SetDefense switches one defense on every gateway that is up (one that is
// down picks the switch up from its config when it restarts); a failure is
// recorded as an event and printed.
func (s *Supervisor) SetDefense(ctx context.Context, name string, on bool) {
	for _, g := range s.gateways {
		if !g.Up() {
			continue
		}
		if err := s.adminJSON(ctx, http.MethodPut, "http://"+g.Admin()+wire.PathAdminDefenses, map[string]any{name: on}, nil); err != nil {
			s.event(runfiles.EventError, g.name+": set defense", map[string]any{"defense": name, "error": err.Error()})
			s.failure("%s: set defense %s: %v", g.name, name, err)
		}
	}
}

// ShowRestart makes the nodes killed since since that are still down show
// d from now as their time to restart (NodeSample.RestartIn): the timeline
// step or fault that killed them brings them back then.
func (s *Supervisor) ShowRestart(since time.Time, d time.Duration) {
	at := time.Now().Add(d)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, killed := range s.killedAt {
		if !killed.Before(since) && !s.nodes[i].Up() && s.nodes[i].RestartIn(time.Now()) == 0 {
			s.nodes[i].setRestart(at)
		}
	}
}

// NodeKnobs reads node i's knobs from its GET /admin/knobs.
func (s *Supervisor) NodeKnobs(ctx context.Context, node int) (map[string]any, error) {
	if node < 0 || node >= len(s.nodes) {
		return nil, fmt.Errorf("lab: node %d does not exist (0..%d)", node, len(s.nodes)-1)
	}
	var knobs map[string]any
	err := s.adminJSON(ctx, http.MethodGet, "http://"+s.nodes[node].Listen()+wire.PathAdminKnobs, nil, &knobs)
	return knobs, err
}

// GatewayState decodes gateway i's GET /admin/state into out.
func (s *Supervisor) GatewayState(ctx context.Context, i int, out any) error {
	if i < 0 || i >= len(s.gateways) {
		return fmt.Errorf("gateway %d: out of range (%d gateways)", i, len(s.gateways))
	}
	g := s.gateways[i]
	if !g.Up() {
		return fmt.Errorf("%s: not running", g.name)
	}
	return s.adminJSON(ctx, http.MethodGet, "http://"+g.Admin()+wire.PathAdminState, nil, out)
}
