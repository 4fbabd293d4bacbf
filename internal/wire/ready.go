package wire

import (
	"bytes"
	"encoding/json"
)

// ReadyKey is the key of the ready line's only member.
const ReadyKey = "levee_ready"

// Kinds of server process, the Ready.Kind values.
const (
	KindGateway   = "gateway"
	KindFakeModel = "fakemodel"
	// KindRedis is `levee redis`, the embedded Redis-protocol server: it
	// has no admin address, and speaks RESP, not HTTP, on Listen.
	KindRedis = "redis"
)

// Ready is what a server process announces once every listener is bound:
// exactly one line on stdout, {"levee_ready":{…}}. The supervisor reads it
// to learn the real ports.
type Ready struct {
	// Kind is KindGateway, KindFakeModel or KindRedis.
	Kind string `json:"kind"`
	// Listen is the traffic address (a fake model's first node).
	Listen string `json:"listen"`
	// Admin is the admin address (a fake model serves it on each node's
	// traffic port, so it equals Listen).
	Admin string `json:"admin"`
	// PID is the process id.
	PID int `json:"pid"`
	// Nodes are a fake model process's node addresses, in order.
	Nodes []string `json:"nodes,omitempty"`
}

type readyLine struct {
	Ready *Ready `json:"levee_ready"`
}

// Line returns r's ready line, without the newline.
func (r Ready) Line() []byte {
	b, _ := json.Marshal(readyLine{Ready: &r}) // a Ready always encodes
	return b
}

// ParseReady decodes a ready line (surrounding space allowed). It returns
// false for any other line, and for a ready line without a Listen address.
func ParseReady(line []byte) (Ready, bool) {
	line = bytes.TrimSpace(line)
	if !bytes.HasPrefix(line, []byte("{")) || !bytes.Contains(line, []byte(ReadyKey)) {
		return Ready{}, false
	}
	var r readyLine
	if json.Unmarshal(line, &r) != nil || r.Ready == nil || r.Ready.Listen == "" {
		return Ready{}, false
	}
	return *r.Ready, true
}
