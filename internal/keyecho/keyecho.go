// Package keyecho is a hostile OpenAI-compatible server for tests: on
// 127.0.0.1, it answers chat completions by echoing the caller's
// Authorization header — and so its API key — in every way a provider
// might: a 401/400/500 error body as JSON, text or HTML, a 401 whose raw
// body writes the key with JSON escapes ("\u0073k-…"), in OpenAI's error
// shape or another (which clients show raw), a 200 body with the key in
// the answer and in extra fields (also escaped so), and a streamed answer
// with the key split across events. Tests then check that the key reaches no
// file and no output (DESIGN §11, Secrets).
package keyecho

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Modes of answering, in the order Modes lists them.
const (
	Unauthorized = "401-json" // {"error":{"message":"Incorrect API key provided: Bearer <key>"}}
	Escaped      = "401-esc"  // the same, every character of the key a JSON \u escape in the raw body
	// EscapedDetail is a 401 whose JSON body is not OpenAI's error shape
	// (a FastAPI server's {"detail": …}), so clients keep it raw, with the
	// key escaped as in Escaped; OKEscaped is OK with the key so escaped.
	EscapedDetail = "401-detail-esc"
	OKEscaped     = "200-json-esc"
	BadRequest    = "400-text"  // text/plain echoing the request headers
	ServerError   = "500-html"  // an HTML error page quoting the header
	OK            = "200-json"  // an answer quoting the key, with the header in extra fields
	OKStream      = "200-sse"   // the same answer streamed, the key split across events
	OKToolCall    = "200-calls" // a tool call whose arguments quote the key
)

// Modes are every way the server echoes the key.
var Modes = []string{Unauthorized, Escaped, EscapedDetail, BadRequest, ServerError, OK, OKStream, OKToolCall, OKEscaped}

// Server is the echoing server.
type Server struct {
	*httptest.Server
	mu   sync.Mutex
	mode string
	seen int
}

// New starts a server answering in mode (changeable with SetMode) and
// closes it when the test ends.
func New(t testing.TB, mode string) *Server {
	s := &Server{mode: mode}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// SetMode changes how the next requests are answered.
func (s *Server) SetMode(mode string) {
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
}

// Requests is how many requests arrived.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	mode := s.mode
	s.seen++
	s.mu.Unlock()
	auth := r.Header.Get("Authorization")
	key := strings.TrimPrefix(auth, "Bearer ")
	var req struct {
		Model string `json:"model"`
	}
	json.Unmarshal(body, &req)
	switch mode {
	case Unauthorized:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": "Incorrect API key provided: " + auth + ". You can find your API key at your account page.",
			"type":    "invalid_request_error", "code": "invalid_api_key", "param": key}})
	case Escaped:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: Bearer %s.","type":"invalid_request_error","code":"invalid_api_key","param":"%s"}}`, Escape(key), Escape(key))
	case EscapedDetail:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"detail":"Incorrect API key provided: Bearer %s","key":"%s"}`+"\n", Escape(key), Escape(key))
	case OKEscaped:
		b, _ := json.Marshal(map[string]any{
			"id": "cmpl-1", "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "done; your key is " + key}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
			"debug":   map[string]any{"api_key": key},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(strings.ReplaceAll(string(b), key, Escape(key))))
	case BadRequest:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "bad request\nAuthorization: %s\napi-key: %s\nurl: http://user:%s@%s/v1\n", auth, key, key, r.Host)
	case ServerError:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "<html><body><h1>500</h1><pre>authorization=%s\nkey %s</pre></body></html>", auth, key)
	case OK, OKToolCall:
		msg := map[string]any{"role": "assistant", "content": "done; your key is " + key + " and the header was " + auth}
		if mode == OKToolCall {
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "no_such_tool", "arguments": fmt.Sprintf(`{"key":%q}`, key)}}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": "cmpl-" + key, "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
			"debug":   map[string]any{"headers": map[string]string{"authorization": auth}, "api_key": key},
		})
	case OKStream:
		w.Header().Set("Content-Type", "text/event-stream")
		half := len(key) / 2
		for _, piece := range []string{"done; your key is ", key[:half], key[half:], " — bye"} {
			b, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": req.Model,
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": piece}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	default:
		http.Error(w, "unknown mode "+mode, http.StatusTeapot)
	}
}

// Escape writes every character of s as a JSON \u escape: how the Escaped
// mode echoes the key, and a form of it tests look for besides the key.
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		fmt.Fprintf(&b, `\u%04x`, r)
	}
	return b.String()
}
