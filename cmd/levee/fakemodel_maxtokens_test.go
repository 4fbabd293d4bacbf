package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-lab/levee/internal/wire"
)

// TestFakemodelMaxTokensFlag runs `levee fakemodel --max-tokens 40000` as
// a child process: a chat and a text completion asking 40000 tokens are
// answered in full (the default bound, 32768, answered them 400), one
// asking 40001 is a 400 naming max_tokens.
func TestFakemodelMaxTokensFlag(t *testing.T) {
	bin := buildLevee(t)
	_, ready := startServer(t, bin, "fakemodel", "--max-tokens", "40000", "--latency", "fixed", "--fixed-ms", "1",
		"--ms-per-1k-tokens", "0", "--answer-tokens", "0")
	base := fmt.Sprintf("http://%s", ready["listen"])
	ask := func(path, body string) (int, []byte) {
		t.Helper()
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, b
	}
	var answer struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	for _, c := range []struct{ path, body string }{
		{wire.PathChat, `{"max_tokens":40000,"messages":[{"role":"user","content":"abcd"}]}`},
		{wire.PathCompletions, `{"max_tokens":40000,"prompt":"abcd"}`},
	} {
		status, b := ask(c.path, c.body)
		if status != 200 || json.Unmarshal(b, &answer) != nil || answer.Usage.CompletionTokens != 40000 {
			t.Fatalf("%s max_tokens 40000 under --max-tokens 40000: %d %.300s", c.path, status, b)
		}
	}
	status, b := ask(wire.PathChat, `{"max_tokens":40001,"messages":[{"role":"user","content":"abcd"}]}`)
	var e wire.ErrorBody
	if status != 400 || json.Unmarshal(b, &e) != nil || e.Error.Field != "max_tokens" || !strings.Contains(e.Error.Message, "40000") {
		t.Fatalf("max_tokens 40001 over --max-tokens 40000: %d %s", status, b)
	}
}
