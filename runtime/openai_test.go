package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/runtime/openaicompat"
	"github.com/inspect-dev/inspect/store"
	openai "github.com/sashabaranov/go-openai"
)

const testKey = "fake-key-NEVER-STORE-ME-4f1c2a9e"

// chatServer is a local server speaking the OpenAI chat completions API.
// reply decides each answer from the decoded request and the attempt count
// of identical bodies; it returns a status and, for 200, the message.
type chatServer struct {
	t      *testing.T
	reply  func(req openai.ChatCompletionRequest, attempt int) (int, *openai.ChatCompletionMessage)
	mu     sync.Mutex
	bodies [][]byte
	tries  map[string]int
	auth   []string
}

func newChatServer(t *testing.T, reply func(openai.ChatCompletionRequest, int) (int, *openai.ChatCompletionMessage)) (*chatServer, *httptest.Server) {
	cs := &chatServer{t: t, reply: reply, tries: map[string]int{}}
	srv := httptest.NewServer(cs)
	t.Cleanup(srv.Close)
	return cs, srv
}

func (cs *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	cs.mu.Lock()
	cs.bodies = append(cs.bodies, body)
	cs.tries[string(body)]++
	attempt := cs.tries[string(body)]
	cs.auth = append(cs.auth, r.Header.Get("Authorization"))
	cs.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", 404)
		return
	}
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad json", 400)
		return
	}
	status, msg := cs.reply(req, attempt)
	if status == -1 { // hang until the client gives up
		<-r.Context().Done()
		return
	}
	if status != 200 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"test status %d","type":"server_error"}}`, status)
		return
	}
	resp := openai.ChatCompletionResponse{ID: "cmpl-1", Object: "chat.completion", Model: req.Model,
		Choices: []openai.ChatCompletionChoice{{Message: *msg, FinishReason: "stop"}},
		Usage:   openai.Usage{PromptTokens: 100, CompletionTokens: 10, TotalTokens: 110, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 64}}}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// snapshot returns the bodies and Authorization headers received so far.
func (cs *chatServer) snapshot() ([][]byte, []string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return append([][]byte(nil), cs.bodies...), append([]string(nil), cs.auth...)
}

func say(s string) *openai.ChatCompletionMessage {
	return &openai.ChatCompletionMessage{Role: "assistant", Content: s}
}

func runHTTP(t *testing.T, srv *httptest.Server, oc openaicompat.Config, task string) (*runtime.Result, *store.DB, []*record.Node) {
	t.Helper()
	db := openDB(t)
	oc.Backoff = time.Millisecond
	oc.Clock = llmhttptest.NewClock(time.Now()) // the waits are counted, not slept
	env := map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": srv.URL + "/v1"}
	res, err := runtime.Run(context.Background(), runtime.Config{
		Project: filepath.Join("testdata", "http"), Tasks: []string{task}, DB: db, RunID: "testrun",
		Getenv: func(k string) string { return env[k] }, OpenAI: oc,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, db, nodes(t, db, res.RunID)
}

func TestOpenAI_RetryAfter429(t *testing.T) {
	cs, srv := newChatServer(t, func(req openai.ChatCompletionRequest, attempt int) (int, *openai.ChatCompletionMessage) {
		if attempt == 1 {
			return 429, nil
		}
		return 200, say("fine")
	})
	res, _, ns := runHTTP(t, srv, openaicompat.Config{}, "hello")
	if res.Status != record.StatusOK || res.Answer != "fine" {
		t.Fatalf("Status = %q (%s), answer %q; want ok, fine", res.Status, res.Error, res.Answer)
	}
	bodies, _ := cs.snapshot()
	if len(bodies) != 2 || !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("server got %d requests, want 2 identical ones (429, then the retry)", len(bodies))
	}
	llm := first(t, ns, "llm", llmIn(""))
	if llm.LLM.Usage.In != 100 || !llm.LLM.Usage.CachedReported || llm.LLM.Usage.Cached != 64 {
		t.Errorf("usage = %+v, want the reported in 100, cached 64", llm.LLM.Usage)
	}
}

// TestOpenAI_Fork runs a fork whose second branch gets 500 forever: that
// branch ends error, the run goes on; every recorded request is the exact
// body the server received; the key is nowhere in the database files.
func TestOpenAI_Fork(t *testing.T) {
	cs, srv := newChatServer(t, func(req openai.ChatCompletionRequest, attempt int) (int, *openai.ChatCompletionMessage) {
		sys, last := req.Messages[0].Content, req.Messages[len(req.Messages)-1]
		switch {
		case strings.Contains(sys, "You are the lead.") && last.Role == "user":
			args := `{"context":"none","branches":[{"name":"good","agent":"worker","instructions":"GOOD"},{"name":"bad","agent":"worker","instructions":"BAD"}]}`
			return 200, &openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "fork", Arguments: args}}}}
		case strings.Contains(sys, "You are the lead."):
			return 200, say("summary: " + last.Content)
		case last.Content == "GOOD":
			return 200, say("good result")
		default:
			return 500, nil
		}
	})
	res, db, ns := runHTTP(t, srv, openaicompat.Config{Retries: 2}, "split it")
	if res.Status != record.StatusOK {
		t.Fatalf("Status = %q (%s), want ok\n%s", res.Status, res.Error, outline(ns))
	}
	join := first(t, ns, "join", func(n *record.Node) bool { return n.Kind == record.KindJoin })
	if got := fmt.Sprintf("%s=%s %s=%s", join.Join.Branches[0].Name, join.Join.Branches[0].Status, join.Join.Branches[1].Name, join.Join.Branches[1].Status); got != "good=ok bad=error" {
		t.Errorf("join = %s, want good=ok bad=error", got)
	}
	if !strings.Contains(res.Answer, "### good (ok)\ngood result") || !strings.Contains(res.Answer, "### bad (error)") || !strings.Contains(res.Answer, "gave up after 3 attempts") {
		t.Errorf("the lead read %q, want both blocks with the error", res.Answer)
	}

	// byte-identical requests
	bodies, auth := cs.snapshot()
	received := map[string]bool{}
	for _, b := range bodies {
		received[string(b)] = true
	}
	llms := 0
	for _, n := range ns {
		if n.Kind != record.KindLLM {
			continue
		}
		llms++
		body, err := db.Request(context.Background(), "testrun", n.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if !received[string(body)] {
			t.Errorf("n%d's recorded request is not a body the server received:\n%s", n.Seq, body)
		}
	}
	if llms != 4 || len(received) != 4 {
		t.Errorf("%d llm nodes and %d distinct bodies received, want 4 and 4", llms, len(received))
	}
	for _, a := range auth {
		if a != "Bearer "+testKey {
			t.Fatalf("Authorization = %q, want the test key (so the check below means something)", a)
		}
	}
	// the key appears nowhere in the database files
	for _, suffix := range []string{"", "-wal", "-shm"} {
		b, err := os.ReadFile(db.Path + suffix)
		if err != nil {
			if suffix == "" {
				t.Fatal(err)
			}
			continue
		}
		if bytes.Contains(b, []byte(testKey)) || bytes.Contains(b, []byte("NEVER-STORE-ME")) {
			t.Errorf("the API key is in %s", filepath.Base(db.Path+suffix))
		}
	}
}

func TestOpenAI_Timeout(t *testing.T) {
	cs, srv := newChatServer(t, func(openai.ChatCompletionRequest, int) (int, *openai.ChatCompletionMessage) {
		return -1, nil
	})
	start := time.Now()
	res, _, ns := runHTTP(t, srv, openaicompat.Config{Timeout: 100 * time.Millisecond, Retries: 1}, "hello")
	if res.Status != record.StatusError || !strings.Contains(res.Error, "no response within 100ms") {
		t.Errorf("Status = %q (%q), want error naming the timeout", res.Status, res.Error)
	}
	if bodies, _ := cs.snapshot(); len(bodies) != 2 {
		t.Errorf("server got %d attempts, want 2 (first + one retry)", len(bodies))
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the run took %s; the timeout did not cut the call", el)
	}
	llm := first(t, ns, "llm", llmIn(""))
	if llm.Status != record.StatusError {
		t.Errorf("llm node status %q, want error", llm.Status)
	}
}

// seqServer answers the n-th request with the n-th step (the last one
// repeats), each a status, headers and a body as the server writes them.
type step struct {
	status int
	header map[string]string
	body   string // "" = an OpenAI answer saying "fine"
}

func seqServer(t *testing.T, steps ...step) *httptest.Server {
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		s := steps[min(n, len(steps)-1)]
		n++
		mu.Unlock()
		var req openai.ChatCompletionRequest
		json.NewDecoder(r.Body).Decode(&req)
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(s.status)
		if s.body != "" {
			io.WriteString(w, s.body)
			return
		}
		json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "c", Object: "chat.completion", Model: req.Model,
			Choices: []openai.ChatCompletionChoice{{Message: *say("fine"), FinishReason: "stop"}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A run that waits on a provider says so: one progress line per retry it
// waits for, with the wait and why; a server's Retry-After sets the wait;
// the llm node records how many attempts it took (issue 12, item 3: eight
// minutes in silence, Retry-After ignored).
func TestOpenAI_RetryProgress(t *testing.T) {
	srv := seqServer(t,
		step{status: 429, header: map[string]string{"Retry-After": "1"}, body: `{"error":{"message":"rate limited","type":"requests"}}`},
		step{status: 503, body: `{"error":{"message":"overloaded","type":"server_error"}}`},
		step{status: 200})
	var progress bytes.Buffer
	db := openDB(t)
	env := map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": srv.URL}
	clock := llmhttptest.NewClock(time.Now()) // the 1s the server asks for is counted, not slept
	res, err := runtime.Run(context.Background(), runtime.Config{
		Project: filepath.Join("testdata", "http"), Tasks: []string{"hello"}, DB: db, RunID: "testrun", Progress: &progress,
		Getenv: func(k string) string { return env[k] }, OpenAI: openaicompat.Config{Backoff: time.Millisecond, Clock: clock},
	})
	if err != nil || res.Status != record.StatusOK || res.Answer != "fine" {
		t.Fatalf("Run = %+v, %v; want ok, fine", res, err)
	}
	lines := regexp.MustCompile(`(?m)^trunk +lead +step 1 +waits .*$`).FindAllString(progress.String(), -1)
	if len(lines) != 2 ||
		!strings.Contains(lines[0], "waits 1s to retry (Retry-After 1s): attempt 1 of 4 failed: HTTP 429: rate limited") ||
		!strings.Contains(lines[1], "waits 2ms to retry: attempt 2 of 4 failed: HTTP 503: overloaded") {
		t.Errorf("progress lines for the retries = %q; all progress:\n%s", lines, progress.String())
	}
	llm := first(t, nodes(t, db, res.RunID), "llm", llmIn(""))
	if llm.LLM.Attempts != 3 {
		t.Errorf("llm node attempts = %d, want 3", llm.LLM.Attempts)
	}
	if w := clock.Waits(); len(w) != 2 || w[0] != time.Second || w[1] != 2*time.Millisecond {
		t.Errorf("the provider waited %v, want [1s 2ms]", w)
	}
}

// A model call that failed keeps what the provider sent back and how many
// times it was sent, so a malformed reply or an error body can be read
// later (issue 12, item 8).
func TestOpenAI_FailedCallKeepsBody(t *testing.T) {
	tests := []struct {
		name     string
		step     step
		retries  int
		attempts int
		body     string
	}{
		{"error body after retries", step{status: 500, body: `{"error":{"message":"boom: shard 7 down","type":"server_error"}}`}, 2, 3, "shard 7 down"},
		{"malformed reply", step{status: 200, body: `{"id": "c", "choices": [{"message": {"role": "assistant", "content": "half`}, -1, 1, `"content": "half`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := seqServer(t, tt.step)
			db := openDB(t)
			env := map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": srv.URL}
			res, err := runtime.Run(context.Background(), runtime.Config{
				Project: filepath.Join("testdata", "http"), Tasks: []string{"hello"}, DB: db, RunID: "testrun",
				Getenv: func(k string) string { return env[k] }, OpenAI: openaicompat.Config{Backoff: time.Millisecond, Retries: tt.retries, Clock: llmhttptest.NewClock(time.Now())},
			})
			if err != nil || res.Status != record.StatusError {
				t.Fatalf("Run = %+v, %v; want the run to end in error", res, err)
			}
			llm := first(t, nodes(t, db, res.RunID), "llm", llmIn(""))
			resp, err := db.Response(context.Background(), res.RunID, llm.Seq)
			if err != nil || !strings.Contains(string(resp), tt.body) {
				t.Errorf("stored response = %q, %v; want the body the provider sent (%q)", resp, err, tt.body)
			}
			if llm.Status != record.StatusError || llm.LLM.Attempts != tt.attempts {
				t.Errorf("llm node %s, attempts %d; want error after %d attempts", llm.Status, llm.LLM.Attempts, tt.attempts)
			}
		})
	}
}

// A Retry-After longer than the provider waits is capped, and the line
// says so: a retry is always bounded.
func TestOpenAI_RetryAfterCapped(t *testing.T) {
	srv := seqServer(t, step{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{"error":{"message":"quota","type":"requests"}}`}, step{status: 200})
	var progress bytes.Buffer
	db := openDB(t)
	env := map[string]string{"OPENAI_API_KEY": testKey, "OPENAI_BASE_URL": srv.URL}
	res, err := runtime.Run(context.Background(), runtime.Config{
		Project: filepath.Join("testdata", "http"), Tasks: []string{"hello"}, DB: db, RunID: "testrun", Progress: &progress,
		Getenv: func(k string) string { return env[k] }, OpenAI: openaicompat.Config{MaxRetryAfter: 10 * time.Millisecond, Clock: llmhttptest.NewClock(time.Now())},
	})
	if err != nil || res.Status != record.StatusOK {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	if want := "waits 10ms to retry (Retry-After asked 1h0m0s; inspect waits at most 10ms): attempt 1 of 4 failed: HTTP 429: quota"; !strings.Contains(progress.String(), want) {
		t.Errorf("progress lacks %q:\n%s", want, progress.String())
	}
}
