package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// server is the scripted model: it answers each wire format's requests from
// the scenario and logs every request it got, which is the ground truth the
// importers' tests compare a session with.
type server struct {
	sc  *Scenario
	dir string // the workspace, for absolute paths in tool arguments
	// bodies, when set, is a folder that receives each request body as
	// <seq>.json (for looking at what a CLI sends; not kept as fixtures).
	bodies string

	mu  sync.Mutex
	seq int
	log *json.Encoder
	// interrupt is called once when the scenario's Interrupt conversation
	// makes its first request.
	interrupt     func()
	interruptOnce sync.Once

	// otlpDir, when set, receives the OTLP exports the CLI sends the
	// server; collector, when set, is the inspect collect they go on to.
	otlpDir   string
	collector string
	otlpSeq   int
}

// Entry is one line of the request log.
type Entry struct {
	Seq  int    `json:"seq"`
	Time string `json:"time"`
	Path string `json:"path"`
	// Agent is the x-claude-code-agent-id header (sub-agent calls carry it).
	Agent string `json:"agent,omitempty"`
	// Conv and Step are what the server read from the conversation.
	Conv string `json:"conv"`
	Step int    `json:"step"`
	// Model is the model the request named.
	Model string `json:"model,omitempty"`
	// Status is the HTTP status answered (200 unless the script failed it).
	Status int `json:"status"`
	// Calls are the tool calls answered (CLI tool names), Text the text.
	Calls []string `json:"calls,omitempty"`
	// CallIDs are the calls' ids where the server makes them (Claude Code,
	// Codex), Tasks the sub-agent conversation each call starts or gives
	// more work ("" for other calls).
	CallIDs []string `json:"call_ids,omitempty"`
	Tasks   []string `json:"tasks,omitempty"`
	Text    string   `json:"text,omitempty"`
	// Usage is what the response reported.
	Usage *Usage `json:"usage,omitempty"`
	// Held means the request was held until the client went away (an
	// interrupt).
	Held bool `json:"held,omitempty"`
	// Body is the request body's SHA-256 and size.
	BodySHA256 string `json:"body_sha256"`
	BodyBytes  int    `json:"body_bytes"`
	// UserID is an Anthropic request's metadata.user_id: the ids Claude
	// Code keeps outside its session (a device id of its own config), the
	// one part of a request its session cannot rebuild.
	UserID string `json:"user_id,omitempty"`
	// Compact marks a request that asked for a summary of conversation
	// Conv (the CLI compacting it); answered with one.
	Compact bool `json:"compact,omitempty"`
	// Side marks a request the scenario did not script (a title or topic
	// request of the CLI's own); answered with a short text.
	Side bool `json:"side,omitempty"`

	body []byte
}

// Usage is the token counts a response reported, in the format's terms
// normalised: In is all input (fresh + cache reads + cache writes).
type Usage struct {
	Input      int `json:"input"`
	CacheRead  int `json:"cache_read"`
	CacheWrite int `json:"cache_write"`
	Output     int `json:"output"`
}

func newServer(sc *Scenario, dir string, logw io.Writer) *server {
	return &server{sc: sc, dir: dir, log: json.NewEncoder(logw)}
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	sum := sha256.Sum256(body)
	e := &Entry{Time: time.Now().UTC().Format(time.RFC3339Nano), Path: r.URL.Path,
		Agent: r.Header.Get("x-claude-code-agent-id"), BodySHA256: hex.EncodeToString(sum[:]), BodyBytes: len(body), body: body}
	switch {
	case strings.HasPrefix(r.URL.Path, "/v1/messages"):
		s.anthropic(w, r, body, e)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		s.responses(w, r, body, e)
	case strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		s.gemini(w, r, body, e)
	case r.URL.Path == "/v1/traces" || r.URL.Path == "/v1/logs" || r.URL.Path == "/v1/metrics":
		s.telemetry(w, r, body)
	default:
		e.Status = 404
		e.Side = true
		s.write(e)
		http.Error(w, "the scripted model does not serve "+r.URL.Path, 404)
	}
}

// telemetry keeps an OTLP/HTTP export the CLI sent (its own traces, when
// the scenario runs with -otel) as otlp/<signal>-<n>.<json|pb>, and hands
// traces on to the collector when one runs (-collect); it is not a model
// request and is not logged.
func (s *server) telemetry(w http.ResponseWriter, r *http.Request, body []byte) {
	s.mu.Lock()
	s.otlpSeq++
	n := s.otlpSeq
	s.mu.Unlock()
	signal := strings.TrimPrefix(r.URL.Path, "/v1/")
	ext := "pb"
	if strings.Contains(r.Header.Get("Content-Type"), "json") {
		ext = "json"
	}
	if s.otlpDir != "" && signal == "traces" {
		_ = os.MkdirAll(s.otlpDir, 0o755)
		_ = os.WriteFile(fmt.Sprintf("%s/%s-%03d.%s", s.otlpDir, signal, n, ext), body, 0o644)
	}
	if s.collector != "" && signal == "traces" {
		req, _ := http.NewRequest("POST", s.collector+"/v1/traces", bytes.NewReader(body))
		req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
		if ce := r.Header.Get("Content-Encoding"); ce != "" {
			req.Header.Set("Content-Encoding", ce)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

// call logs one tool call answered.
func (e *Entry) call(name, id string, c Call) {
	e.Calls = append(e.Calls, name)
	e.CallIDs = append(e.CallIDs, id)
	task := ""
	switch c.Tool {
	case "agent":
		task = c.Task
	case "followup":
		task = c.Next
	}
	e.Tasks = append(e.Tasks, task)
}

// setInterrupt sets what the server calls when the scenario's Interrupt
// conversation makes its first request.
func (s *server) setInterrupt(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interrupt = f
}

func (s *server) write(e *Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	e.Seq = s.seq
	_ = s.log.Encode(e)
	if s.bodies != "" && e.body != nil {
		_ = os.WriteFile(fmt.Sprintf("%s/%03d.json", s.bodies, e.Seq), e.body, 0o644)
	}
}

// hold answers nothing until the client goes away: the request the user
// interrupts.
func (s *server) hold(w http.ResponseWriter, r *http.Request, e *Entry) {
	e.Held = true
	e.Status = 0
	s.write(e)
	s.interruptOnce.Do(func() {
		s.mu.Lock()
		f := s.interrupt
		s.mu.Unlock()
		if f != nil {
			go f()
		}
	})
	select {
	case <-r.Context().Done():
	case <-time.After(60 * time.Second):
		http.Error(w, "held too long", 503)
	}
}

// hugeContext is the input a Huge step reports: near every model's
// window, past every CLI's auto-compaction threshold.
const hugeContext = 995_000

// tokens is the harness's deterministic token count of a body: a quarter
// of its bytes.
func tokens(b []byte) int { return (len(b) + 3) / 4 }

func sseEvent(w io.Writer, name string, v any) {
	j, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", j)
}

func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": msg}})
}

func mustAbs(dir, p string) string {
	if strings.HasPrefix(p, "/") {
		return p
	}
	return dir + "/" + p
}
