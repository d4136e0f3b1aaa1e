package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/internal/keyecho"
	"github.com/inspect-dev/inspect/internal/secret/secrettest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/runtime/openaicompat"
	"github.com/inspect-dev/inspect/store"
)

const (
	echoKey      = "fake-echo-key-7d3b91c4e2a8"
	echoPassword = "fake-url-password-55e1"
)

// TestOpenAI_KeyNeverRecorded: a provider echoing the key (401 JSON, a 401
// with the key JSON-escaped in the raw body, 400 text, 500 HTML, a 200
// answer, a tool call quoting it) put it in
// nodes.error, runs.error, the stored response and the next request — so
// back to the model. The provider boundary redacts every body as it
// arrives; the key and the base URL's password reach no file of the
// database and no progress line (issue 11, defect 2).
func TestOpenAI_KeyNeverRecorded(t *testing.T) {
	for _, mode := range keyecho.Modes {
		if mode == keyecho.OKStream {
			continue // the runtime does not stream
		}
		t.Run(mode, func(t *testing.T) {
			srv := keyecho.New(t, mode)
			dir := t.TempDir()
			path := filepath.Join(dir, "runs.db")
			db, err := store.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			base := strings.Replace(srv.URL, "http://", "http://user:"+echoPassword+"@", 1) + "/v1"
			env := map[string]string{"OPENAI_API_KEY": echoKey, "OPENAI_BASE_URL": base}
			var progress bytes.Buffer
			res, err := runtime.Run(context.Background(), runtime.Config{
				Project: filepath.Join("testdata", "http"), Tasks: []string{"go"}, DB: db, Progress: &progress,
				Getenv: func(k string) string { return env[k] }, MaxSteps: 3,
				OpenAI: openaicompat.Config{Retries: -1, Backoff: time.Millisecond},
			})
			if err != nil {
				t.Fatal(err)
			}
			if srv.Requests() == 0 {
				t.Fatal("the server was never asked")
			}
			db.Close()
			leaks := []string{echoKey, echoPassword, keyecho.Escape(echoKey)}
			for _, s := range []string{res.Error, res.Answer, progress.String()} {
				for _, l := range leaks {
					if strings.Contains(s, l) {
						t.Errorf("%q holds a secret", s)
					}
				}
			}
			files, _ := filepath.Glob(path + "*")
			for _, f := range files {
				b, _ := os.ReadFile(f)
				for _, l := range leaks {
					if bytes.Contains(b, []byte(l)) {
						t.Errorf("%s holds %q", filepath.Base(f), l)
					}
				}
			}
			if mode == keyecho.Unauthorized && !strings.Contains(res.Error, "[redacted]") {
				t.Errorf("run error %q: want the echoed key shown as [redacted]", res.Error)
			}
		})
	}
}

// TestOpenAI_ImpossibleUsageClamped: a provider reporting negative or
// absurd token counts is recorded within [0, record.MaxTokens], and the
// node says what was reported (defect 10).
func TestOpenAI_ImpossibleUsageClamped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "ok"}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": -5, "completion_tokens": 9223372036854775807}})
	}))
	t.Cleanup(srv.Close)
	db := openDB(t)
	env := map[string]string{"OPENAI_API_KEY": echoKey, "OPENAI_BASE_URL": srv.URL + "/v1"}
	res, err := runtime.Run(context.Background(), runtime.Config{
		Project: filepath.Join("testdata", "http"), Tasks: []string{"go"}, DB: db,
		Getenv: func(k string) string { return env[k] }, OpenAI: openaicompat.Config{Retries: -1},
	})
	if err != nil || res.Status != record.StatusOK {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	for _, n := range nodes(t, db, res.RunID) {
		if n.Kind != record.KindLLM {
			continue
		}
		if n.LLM.Usage.In != 0 || n.LLM.Usage.Out != record.MaxTokens {
			t.Errorf("usage = %+v, want in 0 and out clamped to %d", n.LLM.Usage, record.MaxTokens)
		}
		if !strings.Contains(n.Error, "impossible usage (in=-5, out=9223372036854775807)") || n.Status != record.StatusOK {
			t.Errorf("node %s %q: want it ok and flagged with what was reported", n.Status, n.Error)
		}
	}
}

// TestRun_ToolResultRedacted: a command tool that prints the environment
// it was given (DATABASE_URL=postgres://app:PASSWORD@…, a GitHub token, a
// PEM key) has them redacted before its result is recorded and before it
// goes back to the model: the provider (an OpenAI-compatible server on
// 127.0.0.1) never receives them, no file of the database holds them,
// and the model reads [redacted] where they were.
func TestRun_ToolResultRedacted(t *testing.T) {
	kinds := secrettest.Kinds(21)
	dir := t.TempDir()
	project := filepath.Join(dir, "p")
	files := map[string]string{
		"agents.yaml": "model: test-model\nagents:\n  - name: lead\n    description: Looks at the deployment.\n    tools: [env]\n" +
			"tools:\n  - name: env\n    description: Prints the deployment's environment.\n    command: [./tools/env.sh]\n" +
			"    parameters: {type: object, properties: {}}\n",
		"agents/lead.md": "You inspect the deployment with env.\n",
		"tools/env.sh":   "#!/bin/sh\ncat <<'EOF'\n" + secrettest.Text(kinds) + "EOF\n",
	}
	for name, text := range files {
		p := filepath.Join(project, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		n := len(bodies)
		mu.Unlock()
		msg := map[string]any{"role": "assistant", "content": "the deployment looks fine"}
		finish := "stop"
		if n == 1 {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "env", "arguments": "{}"}}}}
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "test-model",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(dir, "runs.db")
	db, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": echoKey, "OPENAI_BASE_URL": srv.URL + "/v1"}
	res, err := runtime.Run(context.Background(), runtime.Config{
		Project: project, Tasks: []string{"check the deployment"}, DB: db,
		Getenv: func(k string) string { return env[k] }, MaxSteps: 4, OpenAI: openaicompat.Config{Retries: -1},
	})
	if err != nil || res.Status != record.StatusOK {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	var result string
	for _, n := range nodes(t, db, res.RunID) {
		if n.Kind == record.KindTool {
			result = n.Tool.Result
		}
	}
	db.Close()
	if len(bodies) != 2 {
		t.Fatalf("the model was asked %d times, want 2 (the call, then the answer)", len(bodies))
	}
	if !strings.Contains(string(bodies[1]), "[redacted]") || !strings.Contains(result, "[redacted]") {
		t.Errorf("the model read %s and the tool node holds %q: want [redacted] where the secrets were", bodies[1], result)
	}
	if !strings.Contains(result, "DATABASE_URL=postgres://") {
		t.Errorf("the tool result %q lost what was around its secrets", result)
	}
	texts := map[string]string{"the request sent after the tool ran": string(bodies[1]), "the tool node": result}
	matches, _ := filepath.Glob(path + "*")
	for _, f := range matches {
		b, _ := os.ReadFile(f)
		texts[filepath.Base(f)] = string(b)
	}
	for where, text := range texts {
		for _, k := range kinds {
			if k.In(text) {
				t.Errorf("%s holds the %s", where, k.Name)
			}
		}
	}
}
