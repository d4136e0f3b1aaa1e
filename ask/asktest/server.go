// Package asktest is a local OpenAI chat completions server for tests: it
// answers POST /chat/completions from registered stubs (JSON or
// server-sent events), checks the bearer key and that every request is a
// valid chat (each assistant tool call answered by a tool message), keeps
// every body it received, and fails the test when a registered stub was
// never used (Verify), in the manner of gh's httpmock registry.
package asktest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Responder writes the response to one request.
type Responder func(w http.ResponseWriter, r *http.Request, body []byte)

// Matcher selects the requests a stub answers; nil matches any.
type Matcher func(body []byte) bool

// Stub is one registered expectation.
type Stub struct {
	mu      *sync.Mutex // the server's
	match   Matcher
	respond Responder
	name    string
	used    int
}

// Request is one request the server received.
type Request struct {
	Body   []byte
	Header http.Header
}

// Server is a running fake provider. Its URL (httptest) is the base URL.
type Server struct {
	*httptest.Server
	// Key is the bearer key requests must carry; empty accepts any.
	Key string

	mu       sync.Mutex
	stubs    []*Stub
	requests []Request
}

// New starts a server that requires key (empty: any) and closes it when
// the test ends.
func New(t testing.TB, key string) *Server {
	s := &Server{Key: key}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Register adds a stub: requests that match are answered by respond. Stubs
// are tried in registration order.
func (s *Server) Register(name string, match Matcher, respond Responder) *Stub {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := &Stub{mu: &s.mu, name: name, match: match, respond: respond}
	s.stubs = append(s.stubs, st)
	return st
}

// Verify fails t for every stub that answered no request.
func (s *Server) Verify(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.stubs {
		if st.used == 0 {
			t.Errorf("asktest: stub %q was registered but never used", st.name)
		}
	}
}

// Requests returns every request received, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Used returns how many requests the stub answered.
func (st *Stub) Used() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.used
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, Request{Body: body, Header: r.Header.Clone()})
	s.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/chat/completions" {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	if s.Key != "" && r.Header.Get("Authorization") != "Bearer "+s.Key {
		writeError(w, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided.")
		return
	}
	if err := ValidateChat(body); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s.mu.Lock()
	var st *Stub
	for _, c := range s.stubs {
		if c.match == nil || c.match(body) {
			st = c
			break
		}
	}
	if st != nil {
		st.used++
	}
	s.mu.Unlock()
	if st == nil {
		writeError(w, http.StatusNotImplemented, "no_stub", "asktest: no stub matches this request")
		return
	}
	st.respond(w, r, body)
}

// ValidateChat checks what the chat completions API checks about message
// order: the body is a JSON object with a model and messages, every
// assistant message with tool_calls is followed by one tool message per
// call id, and no tool message answers a call that was not made.
func ValidateChat(body []byte) error {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		ToolChoice json.RawMessage `json:"tool_choice"`
		Tools      []any           `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return fmt.Errorf("body is not valid JSON: %v", err)
	}
	if req.Model == "" {
		return fmt.Errorf("you must provide a model parameter")
	}
	if len(req.Messages) == 0 {
		return fmt.Errorf("messages must not be empty")
	}
	if len(req.ToolChoice) > 0 && len(req.Tools) == 0 {
		return fmt.Errorf("tool_choice is only allowed when tools are specified")
	}
	for i := 0; i < len(req.Messages); i++ {
		m := req.Messages[i]
		switch {
		case m.Role == "tool":
			return fmt.Errorf("messages[%d]: a message with role 'tool' must be a response to a preceding message with 'tool_calls'", i)
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			want := map[string]bool{}
			for _, c := range m.ToolCalls {
				if c.ID == "" {
					return fmt.Errorf("messages[%d].tool_calls: missing id", i)
				}
				want[c.ID] = true
			}
			j := i + 1
			for ; j < len(req.Messages) && req.Messages[j].Role == "tool"; j++ {
				id := req.Messages[j].ToolCallID
				if !want[id] {
					return fmt.Errorf("messages[%d]: tool_call_id %q answers no pending tool call", j, id)
				}
				delete(want, id)
			}
			if len(want) > 0 {
				var ids []string
				for id := range want {
					ids = append(ids, id)
				}
				return fmt.Errorf("messages[%d]: an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; missing %s", i, strings.Join(ids, ", "))
			}
			i = j - 1
		}
	}
	return nil
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}})
	w.Write(b)
}

// Error responds with status and an OpenAI-style error body.
func Error(status int, code, msg string) Responder {
	return func(w http.ResponseWriter, r *http.Request, body []byte) { writeError(w, status, code, msg) }
}

// Reply is what a stub answers: text, tool calls and usage.
type Reply struct {
	Content   string
	ToolCalls []openai.ToolCall
	// Usage is reported when set; stream requests report it in the last chunk.
	Usage *openai.Usage
}

// Call is a tool call for a Reply.
func Call(id, name, args string) openai.ToolCall {
	return openai.ToolCall{ID: id, Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: name, Arguments: args}}
}

// Answer responds with rep, streamed as server-sent events when the
// request has "stream": true, else as one chat.completion object. The
// model echoed is the request's.
func Answer(rep Reply) Responder {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		finish := openai.FinishReasonStop
		if len(rep.ToolCalls) > 0 {
			finish = openai.FinishReasonToolCalls
		}
		if !req.Stream {
			resp := openai.ChatCompletionResponse{ID: "chatcmpl-test", Object: "chat.completion", Created: 1, Model: req.Model,
				Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: rep.Content, ToolCalls: rep.ToolCalls}, FinishReason: finish}}}
			if rep.Usage != nil {
				resp.Usage = *rep.Usage
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		send := func(c openai.ChatCompletionStreamResponse) {
			c.ID, c.Object, c.Created, c.Model = "chatcmpl-test", "chat.completion.chunk", 1, req.Model
			b, _ := json.Marshal(c)
			fmt.Fprintf(w, "data: %s\n\n", b)
			if fl != nil {
				fl.Flush()
			}
		}
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{Role: "assistant"}}}})
		for _, piece := range splitWords(rep.Content) {
			send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{Content: piece}}}})
		}
		for i, tc := range rep.ToolCalls {
			// name first, then the arguments in two pieces, as providers do.
			idx := i
			half := len(tc.Function.Arguments) / 2
			first := openai.ToolCall{Index: &idx, ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name, Arguments: tc.Function.Arguments[:half]}}
			rest := openai.ToolCall{Index: &idx, Function: openai.FunctionCall{Arguments: tc.Function.Arguments[half:]}}
			for _, d := range []openai.ToolCall{first, rest} {
				send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{d}}}}})
			}
		}
		send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{{FinishReason: finish}}})
		if rep.Usage != nil {
			send(openai.ChatCompletionStreamResponse{Choices: []openai.ChatCompletionStreamChoice{}, Usage: rep.Usage})
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}
}

// splitWords cuts s into pieces that each end after a space, so the
// stream carries text in several chunks and concatenates back to s.
func splitWords(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Sequence answers the n-th request it gets with the n-th responder,
// cycling; safe for concurrent requests.
func Sequence(rs ...Responder) Responder {
	var mu sync.Mutex
	n := 0
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		resp := rs[n%len(rs)]
		n++
		mu.Unlock()
		resp(w, r, body)
	}
}

// Hang waits for d or until the client goes away, then responds with next
// (nil: nothing).
func Hang(d time.Duration, next Responder) Responder {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(d):
		}
		if next != nil {
			next(w, r, body)
		}
	}
}

// Streaming matches requests with "stream": true.
func Streaming(body []byte) bool {
	var req struct {
		Stream bool `json:"stream"`
	}
	return json.Unmarshal(body, &req) == nil && req.Stream
}

// ToolChoiceNone matches requests with "tool_choice": "none" (questions).
func ToolChoiceNone(body []byte) bool {
	var req struct {
		ToolChoice string `json:"tool_choice"`
	}
	return json.Unmarshal(body, &req) == nil && req.ToolChoice == "none"
}
