package wire

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParseReady: any line a child prints is a ready line with a listen
// address or not one; a ready line parsed reads back the same from its own
// Line, and a Ready written with Line (valid UTF-8, a listen address) is
// parsed back as itself. It never panics.
func FuzzParseReady(f *testing.F) {
	f.Add([]byte(`{"levee_ready":{"kind":"gateway","listen":"127.0.0.1:8080","admin":"127.0.0.1:9090","pid":42}}`), "fakemodel", "127.0.0.1:1", "n1,n2", 7)
	f.Add([]byte(`{"levee_ready":{"listen":""}}`), "redis", "[::1]:6379", "", -1)
	f.Add([]byte(`  {"levee_ready":null} `), "", "", "", 0)
	f.Fuzz(func(t *testing.T, line []byte, kind, listen, nodes string, pid int) {
		if r, ok := ParseReady(line); ok {
			if r.Listen == "" {
				t.Fatalf("%q: a ready line without a listen address", line)
			}
			if back, ok := ParseReady(r.Line()); !ok || !reflect.DeepEqual(back, r) {
				t.Fatalf("%q → %s → %+v, %v", line, r.Line(), back, ok)
			}
		}
		if listen == "" || !utf8.ValidString(kind) || !utf8.ValidString(listen) || !utf8.ValidString(nodes) {
			return // JSON cannot carry invalid UTF-8 unchanged
		}
		r := Ready{Kind: kind, Listen: listen, Admin: listen, PID: pid}
		if nodes != "" {
			r.Nodes = strings.Split(nodes, ",")
		}
		if back, ok := ParseReady(r.Line()); !ok || !reflect.DeepEqual(back, r) {
			t.Fatalf("%+v → %s → %+v, %v", r, r.Line(), back, ok)
		}
	})
}
