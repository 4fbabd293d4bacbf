package openai

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

var validCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `-0.5e+10`, `1E-2`, `true`, `false`, `null`, ` {"a" : [1, 2.5, "x\u00e9\n\"", {"b":null}] } `,
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `01`, `1.`, `.5`, `1e`, `1e+`, `-`, `+1`, `tru`, `nul`, `truex`,
	`"\x"`, `"\u12G4"`, `"\u123"`, "\"a\x01b\"", "\"\xff\xfe\"", "\"\t\"", `"\/"`, `[1 2]`, `{"a":1 "b":2}`, `1 2`,
	"\v{}", "{}\v", `{"a":1}x`, `[` + strings.Repeat("[", 9999) + strings.Repeat("]", 10000),
	`[` + strings.Repeat("[", 10000) + strings.Repeat("]", 10001), strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000),
	strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001), "\"\u2028\"", `"\uD800"`,
}

// TestValidMatchesEncodingJSON: Valid answers as json.Valid does.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid %v", c, got, want)
		}
	}
}

// FuzzValidMatchesEncodingJSON: on any input Valid answers as json.Valid.
func FuzzValidMatchesEncodingJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	})
}

// BenchmarkValid: Valid beside json.Valid on a 1 MB answer.
func BenchmarkValid(b *testing.B) {
	body := []byte(`{"choices":[{"message":{"content":"` + strings.Repeat("All work and no play makes a model server dull. ", (1<<20)/49) +
		`"}}],"data":[` + strings.Repeat(`0.01234567,-0.4567891,`, 1000) + `1],"usage":{"total_tokens":1}}`)
	for _, v := range []struct {
		name string
		f    func([]byte) bool
	}{{"current", Valid}, {"encoding_json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !v.f(body) {
					b.Fatal("not valid")
				}
			}
		})
	}
}

// TestValidMatchesOnShortInputs: Valid and json.Valid agree on many short
// inputs made of JSON's own characters (a fixed seed).
func TestValidMatchesOnShortInputs(t *testing.T) {
	const alphabet = "{}[]\":,0123456789.eE+-truefalsnl\\/ubx \t\n\x01\xff"
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, 0, 16)
	for range 300000 {
		b = b[:0]
		for range r.IntN(14) {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid %v", b, got, want)
		}
	}
}
