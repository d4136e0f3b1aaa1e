// Package asktest is a local server of the model APIs inspect ask sends
// to, for tests: OpenAI Chat Completions (POST /chat/completions), OpenAI
// Responses (POST /responses) and Anthropic Messages (POST /v1/messages),
// on 127.0.0.1. It answers from registered stubs (JSON or server-sent
// events, in the API's own format), checks the key the way each API takes
// it (a bearer token; Anthropic's x-api-key and anthropic-version) and
// that every request is one the API accepts (ValidateChat,
// ValidateResponses, ValidateAnthropic: role order, each tool call
// answered, tool_choice only with tools, the required fields), answering
// an invalid one with the API's 400, keeps every body it received, and
// fails the test when a registered stub was never used (Verify), in the
// manner of gh's httpmock registry.
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
	// Path is the path posted to: which API it was.
	Path string
	// Invalid is why the API would refuse Body ("" when it would not).
	Invalid string
}

// The APIs' paths.
const (
	ChatPath      = "/chat/completions"
	ResponsesPath = "/responses"
	MessagesPath  = "/v1/messages"
)

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

// Invalid returns the requests the API posted to would refuse, each with
// why: a test that sends only valid bodies expects none.
func (s *Server) Invalid() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Invalid != "" {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	validate := map[string]func([]byte) error{ChatPath: ValidateChat, ResponsesPath: ValidateResponses, MessagesPath: ValidateAnthropic}[r.URL.Path]
	req := Request{Body: body, Header: r.Header.Clone(), Path: r.URL.Path}
	var invalid error
	if validate != nil {
		invalid = validate(body)
	}
	if invalid != nil {
		req.Invalid = invalid.Error()
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	if r.Method != http.MethodPost || validate == nil {
		writeError(w, r, http.StatusNotFound, "not_found", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
		return
	}
	if s.Key != "" {
		switch r.URL.Path {
		case MessagesPath:
			if r.Header.Get("x-api-key") != s.Key && r.Header.Get("Authorization") != "Bearer "+s.Key {
				writeError(w, r, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
				return
			}
			if r.Header.Get("anthropic-version") == "" {
				writeError(w, r, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
				return
			}
		default:
			if r.Header.Get("Authorization") != "Bearer "+s.Key {
				writeError(w, r, http.StatusUnauthorized, "invalid_api_key", "Incorrect API key provided.")
				return
			}
		}
	}
	if invalid != nil {
		writeError(w, r, http.StatusBadRequest, "invalid_request", invalid.Error())
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
		writeError(w, r, http.StatusNotImplemented, "no_stub", "asktest: no stub matches this request")
		return
	}
	st.respond(w, r, body)
}

// ValidateChat checks what the chat completions API checks about message
// order: the body is a JSON object with a model and messages, every
// assistant message with tool_calls is followed by one tool message per
// call id, and no tool message answers a call that was not made; the
// first message after the system and developer ones is a user message;
// tool_choice comes only with tools, stream_options only with stream, a
// tool is a function with a valid name; the other APIs' fields (system,
// input, instructions, max_output_tokens) are refused.
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
	for i, m := range req.Messages {
		if m.Role == "system" || m.Role == "developer" {
			continue
		}
		if m.Role != "user" {
			return fmt.Errorf("messages[%d]: the conversation starts with a %q message, before any user message", i, m.Role)
		}
		break
	}
	var extra map[string]json.RawMessage
	_ = json.Unmarshal(body, &extra)
	for _, k := range []string{"system", "input", "instructions", "max_output_tokens"} {
		if _, ok := extra[k]; ok {
			return fmt.Errorf("Unrecognized request argument supplied: %s", k)
		}
	}
	if _, ok := extra["stream_options"]; ok {
		var stream bool
		if json.Unmarshal(extra["stream"], &stream) != nil || !stream {
			return fmt.Errorf("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
	}
	var tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(extra["tools"], &tools)
	for i, t := range tools {
		if t.Type != "function" {
			return fmt.Errorf("tools[%d].type: expected 'function'", i)
		}
		if !nameRE.MatchString(t.Function.Name) {
			return fmt.Errorf("Invalid 'tools[%d].function.name': string does not match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
	}
	return nil
}

// writeError writes an error body in the shape of the API posted to:
// OpenAI's {"error": {…}}, Anthropic's {"type": "error", "error": {…}}.
func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var b []byte
	if r.URL.Path == MessagesPath {
		typ := code
		if !strings.HasSuffix(typ, "_error") {
			typ = "invalid_request_error"
		}
		b, _ = json.Marshal(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
	} else {
		b, _ = json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}})
	}
	w.Write(b)
}

// Error responds with status and an error body of the API's shape.
func Error(status int, code, msg string) Responder {
	return func(w http.ResponseWriter, r *http.Request, body []byte) { writeError(w, r, status, code, msg) }
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

// Answer responds with rep in the format of the API posted to, streamed
// as server-sent events when the request has "stream": true, else as one
// response object (chat.completion, a Messages message, a Responses
// response). The model echoed is the request's.
func Answer(rep Reply) Responder {
	return func(w http.ResponseWriter, r *http.Request, body []byte) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		_ = json.Unmarshal(body, &req)
		switch r.URL.Path {
		case MessagesPath:
			answerAnthropic(w, rep, req.Model, req.Stream)
			return
		case ResponsesPath:
			answerResponses(w, rep, req.Model, req.Stream)
			return
		}
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

// ToolChoiceNone matches requests with "tool_choice": "none" (questions),
// or Anthropic's {"type": "none"}.
func ToolChoiceNone(body []byte) bool {
	var req struct {
		ToolChoice json.RawMessage `json:"tool_choice"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	var s string
	if json.Unmarshal(req.ToolChoice, &s) == nil {
		return s == "none"
	}
	var o struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(req.ToolChoice, &o) == nil && o.Type == "none"
}
