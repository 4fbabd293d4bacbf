package openai

import (
	"encoding/json"
	"strings"
	"testing"
)

// answerUsageReference is AnswerUsage as it was: the whole answer decoded.
func answerUsageReference(body []byte) (Usage, bool) {
	var a struct {
		Usage *Usage `json:"usage"`
	}
	if json.Unmarshal(body, &a) != nil || a.Usage == nil {
		return Usage{}, false
	}
	return a.Usage.clamped(), true
}

var usageCases = []string{
	`{"id":"x","choices":[{"message":{"content":"a \"usage\": {} \\\" }"}}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`,
	`{"usage":{"prompt_tokens":3},"usage":{"completion_tokens":5}}`, `{"USAGE":{"prompt_tokens":3}}`, `{"Usage":{"Prompt_Tokens":3}}`,
	`{"us\u0061ge":{"prompt_tokens":3}}`, "{\"usage\u017f\":{\"prompt_tokens\":3}}", `{"usage":null}`, `{"usage":[]}`, `{"usage":"x"}`,
	`{"usage":{"prompt_tokens":1.5}}`, `{"usage":{"prompt_tokens":1e3}}`, `{"usage":{"prompt_tokens":-2,"completion_tokens":99999999999}}`,
	`{"usage":{}}`, `{}`, `[]`, `null`, `"usage"`, `{"a":{"usage":{"prompt_tokens":1}}}`, ` { "usage" : { "total_tokens" : 4 } } `,
	`{"data":[{"embedding":[0.1,-0.2e-3]}],"usage":{"prompt_tokens":7,"total_tokens":7}}`,
	`{"usage":{"prompt_tokens":null,"total_tokens":"2"}}`, `{"usage":{"prompt_tokens":1,"prompt_tokens":2}}`,
	`{"usage":{"prompt_tokens":-0,"x":[1,{"a":2}],"completion_tokens":9223372036854775807}}`,
	`{"usage":{"prompt_tokens":9223372036854775808}}`, `{"usage":{"total_tokens":1.0}}`, `{"usage":{"PROMPT_TOKENS":4}}`, `{"x":"\\\\","usage":{"prompt_tokens":2}}`,
}

// TestAnswerUsageMatchesReference: ValidAnswerUsage reads every valid
// answer as the whole-answer decoding does.
func TestAnswerUsageMatchesReference(t *testing.T) {
	for _, c := range usageCases {
		if !json.Valid([]byte(c)) {
			t.Fatalf("case %s is not JSON", c)
		}
		checkAnswerUsage(t, []byte(c))
	}
	big := []byte(`{"choices":[{"message":{"content":"` + strings.Repeat(`a \"b\" \\`, 1000) + `"}}],"usage":{"total_tokens":1}}`)
	checkAnswerUsage(t, big)
}

func checkAnswerUsage(t *testing.T, body []byte) {
	t.Helper()
	gu, gok := ValidAnswerUsage(body)
	wu, wok := answerUsageReference(body)
	if gu != wu || gok != wok {
		t.Errorf("%s: got %+v %v, want %+v %v", body, gu, gok, wu, wok)
	}
	if au, aok := AnswerUsage(body); au != wu || aok != wok {
		t.Errorf("%s: AnswerUsage %+v %v, want %+v %v", body, au, aok, wu, wok)
	}
}

// FuzzAnswerUsageMatchesReference: on any valid JSON ValidAnswerUsage
// answers as the whole-answer decoding does.
func FuzzAnswerUsageMatchesReference(f *testing.F) {
	for _, c := range usageCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if !json.Valid(body) {
			if _, ok := AnswerUsage(body); ok {
				t.Fatalf("%q: usage read from a body that is not JSON", body)
			}
			return
		}
		checkAnswerUsage(t, body)
	})
}

// BenchmarkAnswerUsage: the usage of a large answer — 1 MB of text, and
// 128 embeddings of 1,536 floats — read by ValidAnswerUsage and by the
// whole-answer decoding it replaced.
func BenchmarkAnswerUsage(b *testing.B) {
	usage := `"usage":{"prompt_tokens":120,"completion_tokens":262144,"total_tokens":262264}}`
	text := []byte(`{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("All work and no play makes a model server dull. ", (1<<20)/49) + `"},"finish_reason":"length"}],` + usage)
	var eb strings.Builder
	eb.WriteString(`{"object":"list","data":[`)
	for i := range 128 {
		if i > 0 {
			eb.WriteByte(',')
		}
		eb.WriteString(`{"object":"embedding","index":1,"embedding":[`)
		for j := range 1536 {
			if j > 0 {
				eb.WriteByte(',')
			}
			eb.WriteString([]string{"0.01234567", "-0.4567891", "0.33333333"}[(i+j)%3])
		}
		eb.WriteString("]}")
	}
	eb.WriteString(`],"model":"e",` + usage)
	for _, body := range []struct {
		name string
		b    []byte
	}{{"text", text}, {"embeddings", []byte(eb.String())}} {
		for _, p := range []struct {
			name string
			f    func([]byte) (Usage, bool)
		}{{"current", ValidAnswerUsage}, {"reference", answerUsageReference}} {
			b.Run(body.name+"/"+p.name, func(b *testing.B) {
				b.SetBytes(int64(len(body.b)))
				b.ReportAllocs()
				for b.Loop() {
					if _, ok := p.f(body.b); !ok {
						b.Fatal("no usage")
					}
				}
			})
		}
	}
}
