package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// NodeSet is the `node` parameter of the faults that act on model nodes
// (node_kill, model_latency, model_slots, node_hang, model_errors,
// gc_pressure with target node): the 0-based indexes of the nodes the
// fault acts on, or a lone -1 for every node.
//
// In JSON (and so in an experiment's YAML) it is an integer — 1, or -1
// for every node — or a list of indexes, [0, 2], for several nodes at
// once. A one-element NodeSet writes as the integer, a longer one as the
// list, so the parameters of existing runs read and write as before.
// Validate refuses an empty list, a negative index other than a lone -1
// (-1 in a list included) and an index given twice; CheckTargets refuses
// an index the lab does not have.
type NodeSet []int

// AllNodes is the NodeSet of every node: a lone -1.
func AllNodes() NodeSet { return NodeSet{-1} }

// Nodes is the NodeSet of the nodes listed (0-based).
func Nodes(i ...int) NodeSet { return append(NodeSet(nil), i...) }

// All reports whether s is a lone -1: every node.
func (s NodeSet) All() bool { return len(s) == 1 && s[0] == -1 }

// nodeSetError is a `node` that is neither an integer nor a list of
// integers; decodeParams reports it as a ParamError on field node.
type nodeSetError struct{ msg string }

func (e *nodeSetError) Error() string { return "node: " + e.msg }

// UnmarshalJSON reads an integer or a list of integers. null leaves s as
// it is (the fault's default), as encoding/json does for an int. A
// negative entry in a list is refused here, where the list is still
// visible: [-1] is not "every node" spelled another way but a mistake.
func (s *NodeSet) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	const want = "must be a node index (0-based), -1 for every node, or a list of indexes such as [0, 2]"
	if len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(b, &list); err != nil {
			return &nodeSetError{fmt.Sprintf("%s; got %s", want, b)}
		}
		out := make(NodeSet, 0, len(list))
		for i, raw := range list {
			var n int
			if err := json.Unmarshal(raw, &n); err != nil {
				return &nodeSetError{fmt.Sprintf("entry %d: must be a node index (0-based), got %s", i, raw)}
			}
			switch {
			case n == -1:
				return &nodeSetError{"-1 (every node) stands alone, not in a list: write node: -1, or list the nodes"}
			case n < 0:
				return &nodeSetError{fmt.Sprintf("entry %d: must be ≥ 0, got %d", i, n)}
			}
			out = append(out, n)
		}
		*s = out
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return &nodeSetError{fmt.Sprintf("%s; got %s", want, b)}
	}
	*s = NodeSet{n}
	return nil
}

// MarshalJSON writes one index as the integer, several as a list.
func (s NodeSet) MarshalJSON() ([]byte, error) {
	if len(s) == 1 {
		return json.Marshal(s[0])
	}
	return json.Marshal([]int(s))
}

// validate reports what makes s no NodeSet at all, whatever the lab: empty,
// a negative index other than a lone -1, an index given twice.
func (s NodeSet) validate(fault string) error {
	switch {
	case len(s) == 0:
		return paramErr(fault, "node", "the list is empty: name at least one node, or -1 for every node")
	case len(s) == 1:
		if s[0] < -1 {
			return paramErr(fault, "node", "must be ≥ 0, or -1 for every node; got %d", s[0])
		}
		return nil
	}
	seen := make(map[int]bool, len(s))
	for i, n := range s {
		switch {
		case n == -1:
			return paramErr(fault, "node", "-1 (every node) stands alone, not in a list: write node: -1, or list the nodes")
		case n < 0:
			return paramErr(fault, "node", "entry %d: must be ≥ 0, got %d", i, n)
		case seen[n]:
			return paramErr(fault, "node", "node %d is listed twice", n)
		}
		seen[n] = true
	}
	return nil
}

// check reports an index of s that names none of the lab's n nodes (-1,
// every node, always names some when n > 0).
func (s NodeSet) check(fault string, n int) error {
	if s.All() {
		if n > 0 {
			return nil
		}
		return paramErr(fault, "node", "node -1 does not exist (the lab has %d nodes: 0..%d, or -1 for all)", n, n-1)
	}
	for _, i := range s {
		if i < 0 || i >= n {
			return paramErr(fault, "node", "node %d does not exist (the lab has %d nodes: 0..%d, or -1 for all)", i, n, n-1)
		}
	}
	return nil
}

// resolve is the nodes s names in a lab of env's nodes, in s's order: all
// of them for -1.
func (s NodeSet) resolve(fault string, env Env) ([]int, error) {
	n := env.NodeCount()
	if s.All() {
		if n == 0 {
			return nil, fmt.Errorf("chaos: %s: the lab has no model nodes", fault)
		}
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if err := s.validate(fault); err != nil {
		return nil, err
	}
	if err := s.check(fault, n); err != nil {
		return nil, err
	}
	return append([]int(nil), s...), nil
}

// String is the human text of s in a fault's Detail: "all nodes", "#2"
// for one node (1-based, as the dashboard numbers them), "nodes #1, #3"
// for several.
func (s NodeSet) String() string {
	switch {
	case s.All():
		return "all nodes"
	case len(s) == 1:
		return fmt.Sprintf("#%d", s[0]+1)
	}
	parts := make([]string, len(s))
	for i, n := range s {
		parts[i] = fmt.Sprintf("#%d", n+1)
	}
	return "nodes " + strings.Join(parts, ", ")
}
