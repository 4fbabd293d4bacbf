package jsonstrict

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

type inner struct {
	Limit *int   `json:"limit"`
	Algo  string `json:"algorithm,omitempty"`
}

type embedded struct {
	Node int `json:"node"`
}

type outer struct {
	embedded
	Classes map[string]inner `json:"classes"`
	Rules   []inner          `json:"rules"`
	Budget  *int64           `json:"token_budget"`
	Raw     json.RawMessage  `json:"raw"`
	When    stamp            `json:"when"`
	Skip    int              `json:"-"`
	Untaged int
}

// stamp decodes itself: its names are not checked.
type stamp struct{ t time.Time }

func (s *stamp) UnmarshalJSON(b []byte) error { return nil }

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		path     string // "" for no error
		msg      string
	}{
		{"exact names", `{"node":1,"classes":{"ai":{"limit":3,"algorithm":"aimd"}},"rules":[{"limit":1}],"token_budget":5,"Untaged":1}`, "", ""},
		{"an unknown name", `{"nope":1}`, "nope", "unknown field"},
		{"an unknown name deep down, by its path", `{"classes":{"ai":{"nope":2}}}`, "classes.ai.nope", "unknown field"},
		{"malformed JSON is the decoder's", `{"node":`, "", ""},
		{"not an object", `[1,2]`, "", ""},
		{"a map's keys are free in case", `{"classes":{"AI":{"limit":1},"ai":{"limit":2}}}`, "", ""},
		{"a raw value is not looked into", `{"raw":{"X":1,"X":2}}`, "", ""},
		{"an unmarshaler's names are its own", `{"when":{"T":1}}`, "", ""},

		{"case of a top-level field", `{"Token_Budget":5}`, "Token_Budget", "names are exact: token_budget"},
		{"case of an embedded field", `{"NODE":1}`, "NODE", "names are exact: node"},
		{"case inside a map value", `{"classes":{"ai":{"Limit":3}}}`, "classes.ai.Limit", "names are exact: limit"},
		{"case inside an array", `{"rules":[{"limit":1},{"LIMIT":2}]}`, "rules[1].LIMIT", "names are exact: limit"},
		{"a field given twice", `{"node":1,"node":2}`, "node", "given twice"},
		{"a map key given twice", `{"classes":{"ai":{},"ai":{}}}`, "classes.ai", "given twice"},
		{"a name given twice deep down", `{"rules":[{"limit":1,"limit":2}]}`, "rules[0].limit", "given twice"},
		{"a json:\"-\" field is not a field", `{"Skip":1}`, "Skip", "unknown field"},
		{"an empty name", `{"":1}`, `""`, "unknown field"},
		{"an empty name deep down", `{"classes":{"ai":{"":1}}}`, `classes.ai.""`, "unknown field"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v outer
			err := Check([]byte(tc.in), &v)
			if tc.path == "" {
				if err != nil {
					t.Fatalf("Check = %v; want nil", err)
				}
				return
			}
			var ne *NameError
			if !errors.As(err, &ne) || ne.Path != tc.path || !strings.Contains(ne.Msg, tc.msg) {
				t.Fatalf("Check = %v; want a NameError at %q saying %q", err, tc.path, tc.msg)
			}
		})
	}
	// The structured fields callers phrase their own errors from.
	var ne *NameError
	if err := Check([]byte(`{"classes":{"ai":{"Limit":3}}}`), &outer{}); !errors.As(err, &ne) || ne.Exact != "classes.ai.limit" || ne.Twice {
		t.Errorf("a case variant: %+v; want Exact classes.ai.limit", err)
	}
	if err := Check([]byte(`{"node":1,"node":2}`), &outer{}); !errors.As(err, &ne) || !ne.Twice || ne.Exact != "" {
		t.Errorf("a name twice: %+v; want Twice", err)
	}
	// Into a map (a patch of named booleans): keys are checked for
	// duplicates only.
	var m map[string]*bool
	if err := Check([]byte(`{"guard":true,"Guard":false}`), &m); err != nil {
		t.Errorf("map keys differing in case: %v", err)
	}
	if err := Check([]byte(`{"guard":true,"guard":false}`), &m); err == nil {
		t.Error("a map key given twice passed")
	}
}

// allocated is the bytes Check allocates on data.
func allocated(data []byte) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_ = Check(data, &outer{})
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// Check's work grows with the text, not with its square: it once copied
// the whole path at every level, so 40 KB of brackets took 13 s (some
// 4 KB allocated per byte of the text at 12 KB). Its allocations per byte of
// text must not grow with the depth.
func TestCheckDeepNestingIsLinear(t *testing.T) {
	for name, text := range map[string]func(n int) string{
		"valid arrays": func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) },
		"unterminated": func(n int) string { return strings.Repeat("[", 2*n) },
	} {
		for _, n := range []int{1000, 6000} {
			data := []byte(text(n))
			if perByte := allocated(data) / uint64(len(data)); perByte > 200 {
				t.Errorf("%s, %d deep: %d bytes allocated per byte of text", name, n, perByte)
			}
		}
	}
}

// A deep name error still has its whole path.
func TestCheckDeepPath(t *testing.T) {
	in := `{"rules":[{"limit":1},{"limit":2,"algorithm":"a","Limit":3}]}`
	var ne *NameError
	if err := Check([]byte(in), &outer{}); !errors.As(err, &ne) || ne.Path != "rules[1].Limit" || ne.Exact != "rules[1].limit" {
		t.Fatalf("got %v (%+v)", err, ne)
	}
}
