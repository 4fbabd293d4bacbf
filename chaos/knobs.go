package chaos

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// savedKnobs is what to send back to each node to undo a knob patch: the
// values the patched knobs had before.
type savedKnobs map[int]map[string]any

// patchKnobs sends patch to each node and saves the knobs' previous values.
// On any failure it restores the nodes patched so far and returns the error.
func patchKnobs(ctx context.Context, env Env, fault string, nodes []int, patch map[string]any) (savedKnobs, error) {
	saved := savedKnobs{}
	keys := make([]string, 0, len(patch))
	for k := range patch {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, i := range nodes {
		before, err := env.PatchNodeKnobs(ctx, i, patch)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("chaos: %s: patch node %d knobs: %w", fault, i, err), saved.restore(ctx, env, fault))
		}
		restore := make(map[string]any, len(patch))
		for _, k := range keys {
			v, ok := before[k]
			if !ok {
				err := fmt.Errorf("chaos: %s: node %d did not report knob %q before the patch, so it cannot be restored", fault, i, k)
				return nil, errors.Join(err, saved.restore(ctx, env, fault))
			}
			restore[k] = v
		}
		saved[i] = restore
	}
	return saved, nil
}

// restore sends the saved values back to every node, trying all of them;
// nodes restored are forgotten, so a retry only resends the failed ones.
func (s savedKnobs) restore(ctx context.Context, env Env, fault string) error {
	var errs []error
	nodes := make([]int, 0, len(s))
	for i := range s {
		nodes = append(nodes, i)
	}
	sort.Ints(nodes)
	for _, i := range nodes {
		if _, err := env.PatchNodeKnobs(ctx, i, s[i]); err != nil {
			errs = append(errs, fmt.Errorf("chaos: %s: restore node %d knobs: %w", fault, i, err))
			continue
		}
		delete(s, i)
	}
	return errors.Join(errs...)
}
