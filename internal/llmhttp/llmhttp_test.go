package llmhttp_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/internal/keyecho"
	"github.com/inspect-dev/inspect/internal/llmhttp"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
)

const testKey = "fake-llmhttp-key-3e9a1c7b5d20"

// server is a provider on 127.0.0.1 that answers the n-th request with the
// n-th handler (the last one repeats) and keeps every request.
type server struct {
	*httptest.Server
	mu       sync.Mutex
	handlers []http.HandlerFunc
	bodies   [][]byte
	headers  []http.Header
	paths    []string
}

func newServer(t *testing.T, handlers ...http.HandlerFunc) *server {
	s := &server{handlers: handlers}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		h := s.handlers[min(len(s.bodies), len(s.handlers)-1)]
		s.bodies = append(s.bodies, body)
		s.headers = append(s.headers, r.Header.Clone())
		s.paths = append(s.paths, r.URL.Path)
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("the test server listens on %s, want 127.0.0.1", s.URL)
	}
	return s
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":"status %d","type":"test"}}`, code)
	}
}

func ok(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"answer":"fine"}`)
}

// sse writes events, flushing each, then calls end (which may cut the
// connection).
func sse(events []string, end func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprintf(w, "data: %s\n\n", e)
			w.(http.Flusher).Flush()
		}
		if end != nil {
			end(w, r)
		}
	}
}

// cut closes the connection under the response, mid-stream.
func cut(w http.ResponseWriter, _ *http.Request) {
	if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
		conn.Close()
	}
}

// lines is a Reader for a test format whose stream is data: lines of text
// ended by data: END, and whose JSON body is the answer itself.
func lines(got *string) llmhttp.Reader {
	return func(b *llmhttp.Body) error {
		if !b.Stream {
			data, err := b.Bytes()
			if err == nil {
				*got = string(data)
			}
			return err
		}
		sc := bufio.NewScanner(b)
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			if d == "END" {
				return nil
			}
			b.Deliver(d)
			*got += d
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read stream: %w", err)
		}
		return llmhttp.ErrIncomplete
	}
}

func client(s *server, clock llmhttp.Clock) *llmhttp.Client {
	c := llmhttp.New(testKey, s.URL)
	c.Clock = clock
	c.HeaderTimeout, c.IdleTimeout = 5*time.Second, 5*time.Second
	return c
}

var start = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// The retry policy: which statuses are retried, how often (Retries: 0 is
// the default 3, NoRetries sends once), how long each wait is (doubling
// from 1s), and that every attempt sends the same bytes.
func TestDo_Retries(t *testing.T) {
	tests := []struct {
		name     string
		retries  int
		handlers []http.HandlerFunc
		attempts int
		waits    []time.Duration
		status   int // of the APIError; 0 = success
		gaveUp   bool
	}{
		{"429 500 503 then ok", 0, []http.HandlerFunc{status(429), status(500), status(503), ok}, 4, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, 0, false},
		{"408 then ok", 0, []http.HandlerFunc{status(408), ok}, 2, []time.Duration{time.Second}, 0, false},
		{"Retries 0 is the default 3", 0, []http.HandlerFunc{status(502)}, 4, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}, 502, true},
		{"Retries 1", 1, []http.HandlerFunc{status(500)}, 2, []time.Duration{time.Second}, 500, true},
		{"NoRetries", llmhttp.NoRetries, []http.HandlerFunc{status(500)}, 1, nil, 500, true},
		{"400 is not retried", 0, []http.HandlerFunc{status(400)}, 1, nil, 400, false},
		{"401 is not retried", 0, []http.HandlerFunc{status(401)}, 1, nil, 401, false},
		{"404 is not retried", 0, []http.HandlerFunc{status(404)}, 1, nil, 404, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, tt.handlers...)
			clock := llmhttptest.NewClock(start)
			c := client(s, clock)
			c.Retries = tt.retries
			body := []byte(`{"model":"m",  "messages":[{"role":"user","content":"caf\u00e9"}]}`) // spacing and escapes kept as they are
			var sent [][]byte
			var retries []llmhttp.Retry
			var got string
			res, err := c.Do(context.Background(), &llmhttp.Call{Body: body, Model: "m",
				Sent:    func(b []byte) { sent = append(sent, b) },
				OnRetry: func(r llmhttp.Retry) { retries = append(retries, r) }}, lines(&got))
			var apiErr *llmhttp.APIError
			switch {
			case tt.status == 0 && (err != nil || got != `{"answer":"fine"}`):
				t.Fatalf("Do = %v, answer %q; want the answer", err, got)
			case tt.status != 0 && (!errors.As(err, &apiErr) || apiErr.StatusCode != tt.status || apiErr.Attempts != tt.attempts || apiErr.Message != fmt.Sprintf("status %d", tt.status)):
				t.Fatalf("Do error = %v, want an APIError %d after %d attempts", err, tt.status, tt.attempts)
			}
			if res.Attempts != tt.attempts || s.requests() != tt.attempts || res.GaveUp != tt.gaveUp {
				t.Errorf("attempts %d, server saw %d, gave up %v; want %d, %v", res.Attempts, s.requests(), res.GaveUp, tt.attempts, tt.gaveUp)
			}
			if !reflect.DeepEqual(clock.Waits(), tt.waits) {
				t.Errorf("waits = %v, want %v", clock.Waits(), tt.waits)
			}
			if len(retries) != len(tt.waits) {
				t.Errorf("OnRetry told of %d retries, want %d", len(retries), len(tt.waits))
			}
			total := tt.retries + 1 // the attempts the client makes in all
			switch {
			case tt.retries == 0:
				total = llmhttp.DefaultRetries + 1
			case tt.retries < 0:
				total = 1
			}
			for i, r := range retries {
				if r.Attempt != i+1 || r.Attempts != total || r.Wait != tt.waits[i] || r.Err == nil {
					t.Errorf("retry %d = %+v", i, r)
				}
			}
			if len(sent) != 1 || !bytes.Equal(sent[0], body) {
				t.Errorf("Sent got %q, want the body once", sent)
			}
			for i, b := range s.bodies {
				if !bytes.Equal(b, body) {
					t.Errorf("attempt %d sent %q, want %q byte for byte", i+1, b, body)
				}
				if h := s.headers[i].Get("Authorization"); h != "Bearer "+testKey || s.paths[i] != "/chat/completions" {
					t.Errorf("attempt %d: %s with Authorization %q", i+1, s.paths[i], h)
				}
			}
		})
	}
}

// Doubling caps at MaxBackoff.
func TestDoubling(t *testing.T) {
	b := llmhttp.Doubling(time.Second)
	var got []time.Duration
	for n := 1; n <= 7; n++ {
		got = append(got, b(n))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Doubling(1s) = %v, want %v", got, want)
	}
}

// A Retry-After, in seconds or as an HTTP date, is the wait, capped at
// MaxRetryAfter; the Retry says what the server asked for.
func TestDo_RetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		header     string
		max        time.Duration
		wait, asks time.Duration
	}{
		{"seconds", "7", 0, 7 * time.Second, 7 * time.Second},
		{"date", start.Add(90 * time.Second).Format(http.TimeFormat), 5 * time.Minute, 90 * time.Second, 90 * time.Second},
		{"capped", "3600", 0, llmhttp.DefaultMaxRetryAfter, time.Hour},
		{"capped lower", "3600", 10 * time.Millisecond, 10 * time.Millisecond, time.Hour},
		{"a date past is no wait asked", start.Add(-time.Hour).Format(http.TimeFormat), 0, time.Second, 0},
		{"garbage", "soon", 0, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, status(503, "Retry-After", tt.header), ok)
			clock := llmhttptest.NewClock(start)
			c := client(s, clock)
			c.MaxRetryAfter = tt.max
			var retries []llmhttp.Retry
			var got string
			if _, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`), OnRetry: func(r llmhttp.Retry) { retries = append(retries, r) }}, lines(&got)); err != nil {
				t.Fatal(err)
			}
			if w := clock.Waits(); len(w) != 1 || w[0] != tt.wait || len(retries) != 1 || retries[0].RetryAfter != tt.asks || retries[0].Wait != tt.wait {
				t.Errorf("waits %v, retries %+v; want a wait of %s, Retry-After %s", w, retries, tt.wait, tt.asks)
			}
		})
	}
}

// A 401 whose raw body echoes the key JSON-escaped ("\u0066\u0061…", as
// keyecho.Escaped writes it): neither the key nor its escaped form reaches
// the error, its message or the body kept; the body stays JSON.
func TestDo_EscapedKeyScrubbed(t *testing.T) {
	echo := keyecho.New(t, keyecho.Escaped)
	if !strings.HasPrefix(echo.URL, "http://127.0.0.1:") {
		t.Fatalf("keyecho listens on %s", echo.URL)
	}
	c := llmhttp.New(testKey, echo.URL)
	c.Clock = llmhttptest.NewClock(start)
	var got string
	res, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{"model":"m","messages":[]}`)}, lines(&got))
	var apiErr *llmhttp.APIError
	if !errors.As(err, &apiErr) || !apiErr.Unauthorized() || echo.Requests() != 1 {
		t.Fatalf("Do = %v after %d requests, want one 401", err, echo.Requests())
	}
	if !bytes.Contains(res.Body, []byte(keyecho.Escape(testKey))) && !bytes.Contains(res.Body, []byte("[redacted]")) {
		t.Fatalf("kept body %s: the echo did not come back, so this test proves nothing", res.Body)
	}
	for _, leak := range []string{testKey, keyecho.Escape(testKey), "\\u0066\\u0061\\u006b\\u0065"} {
		for what, s := range map[string]string{"error": err.Error(), "message": apiErr.Message, "body": string(res.Body), "APIError.Body": string(apiErr.Body)} {
			if strings.Contains(s, leak) {
				t.Errorf("the %s holds %q: %s", what, leak, s)
			}
		}
	}
	if !strings.Contains(apiErr.Message, "Incorrect API key provided: Bearer [redacted]") || apiErr.Code != "invalid_api_key" {
		t.Errorf("message %q code %q, want the provider's message with the key redacted", apiErr.Message, apiErr.Code)
	}
}

// A stream cut mid-way, after part of the answer was delivered: a
// *CutOffError holding that part, not retried. Cut before any text, it is
// retried. A stream that ends without its end marker is cut off too.
func TestDo_StreamCut(t *testing.T) {
	t.Run("after text", func(t *testing.T) {
		s := newServer(t, sse([]string{"I forked ", "because "}, cut), sse([]string{"never asked", "END"}, nil))
		var shown []string
		var got string
		_, err := client(s, llmhttptest.NewClock(start)).Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`), OnText: func(t string) { shown = append(shown, t) }}, lines(&got))
		var cutErr *llmhttp.CutOffError
		if !errors.As(err, &cutErr) || cutErr.Text != "I forked because " || cutErr.Err == nil {
			t.Fatalf("Do = %v, want a CutOffError with the text and the read error", err)
		}
		if s.requests() != 1 || strings.Join(shown, "") != "I forked because " {
			t.Errorf("%d requests, shown %q; want 1, and the part that arrived", s.requests(), shown)
		}
		if !strings.Contains(err.Error(), "the answer was cut off after 17 bytes") {
			t.Errorf("error %q", err)
		}
	})
	t.Run("before text", func(t *testing.T) {
		s := newServer(t, sse(nil, cut), sse([]string{"all ", "of it", "END"}, nil))
		var got string
		res, err := client(s, llmhttptest.NewClock(start)).Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
		if err != nil || got != "all of it" || res.Attempts != 2 {
			t.Fatalf("Do = %v, %q after %d attempts; want the whole answer on the second", err, got, res.Attempts)
		}
	})
	t.Run("ends early", func(t *testing.T) {
		s := newServer(t, sse([]string{"half"}, nil))
		var got string
		_, err := client(s, llmhttptest.NewClock(start)).Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
		var cutErr *llmhttp.CutOffError
		if !errors.As(err, &cutErr) || cutErr.Text != "half" || cutErr.Err != nil || s.requests() != 1 {
			t.Fatalf("Do = %v after %d requests, want a CutOffError for the stream that simply ended", err, s.requests())
		}
	})
	t.Run("key split across events", func(t *testing.T) {
		half := len(testKey) / 2
		s := newServer(t, sse([]string{"key " + testKey[:half], testKey[half:] + " bye", "END"}, nil))
		var shown strings.Builder
		var got string
		if _, err := client(s, llmhttptest.NewClock(start)).Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`), OnText: func(t string) { shown.WriteString(t) }}, lines(&got)); err != nil {
			t.Fatal(err)
		}
		if shown.String() != "key [redacted] bye" {
			t.Errorf("shown %q, want the key redacted across the events", shown.String())
		}
	})
}

// The timeouts: no response starting within HeaderTimeout is retried; a
// silence past IdleTimeout after text is a cut-off whose cause is the
// timeout.
func TestDo_Timeouts(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	t.Run("header", func(t *testing.T) {
		s := newServer(t, hang)
		c := client(s, llmhttptest.NewClock(start))
		c.HeaderTimeout, c.Retries = 50*time.Millisecond, 1
		var got string
		_, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
		var te *llmhttp.TimeoutError
		if !errors.As(err, &te) || te.Attempts != 2 || te.Waiting != "the response to start" || s.requests() != 2 {
			t.Fatalf("Do = %v after %d requests, want a TimeoutError after 2 attempts", err, s.requests())
		}
	})
	t.Run("idle", func(t *testing.T) {
		s := newServer(t, sse([]string{"par"}, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		c := client(s, llmhttptest.NewClock(start))
		c.IdleTimeout = 50 * time.Millisecond
		var got string
		_, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
		var te *llmhttp.TimeoutError
		var cutErr *llmhttp.CutOffError
		if !errors.As(err, &cutErr) || !errors.As(err, &te) || te.Waiting != "more of the response" || cutErr.Text != "par" || s.requests() != 1 {
			t.Fatalf("Do = %v after %d requests, want a cut-off by the idle timeout", err, s.requests())
		}
	})
}

// A cancelled context ends the call with its error, also during a wait;
// cancelled mid-answer, the call is a cut-off holding what arrived.
func TestDo_Cancel(t *testing.T) {
	s := newServer(t, status(503))
	ctx, cancel := context.WithCancel(context.Background())
	var got string
	_, err := client(s, llmhttptest.NewClock(start)).Do(ctx, &llmhttp.Call{Body: []byte(`{}`), OnRetry: func(llmhttp.Retry) { cancel() }}, lines(&got))
	if !errors.Is(err, context.Canceled) || s.requests() != 1 {
		t.Errorf("Do = %v after %d requests, want context.Canceled after 1", err, s.requests())
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	s = newServer(t, sse([]string{"half"}, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	_, err = client(s, llmhttptest.NewClock(start)).Do(ctx, &llmhttp.Call{Body: []byte(`{}`)}, func(b *llmhttp.Body) error {
		sc := bufio.NewScanner(b)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				b.Deliver(d)
				cancel() // the user's Ctrl-C, once the half is shown
			}
		}
		return sc.Err()
	})
	var cutErr *llmhttp.CutOffError
	if !errors.As(err, &cutErr) || cutErr.Text != "half" || !errors.Is(err, context.Canceled) {
		t.Errorf("Do cancelled mid-answer = %v, want a cut-off with the text, caused by the cancel", err)
	}
}

// The Result's Body is the last attempt's: an error body is not kept as
// the body of the stream that answered the retry.
func TestDo_ResultBody(t *testing.T) {
	s := newServer(t, status(500), sse([]string{"ok", "END"}, nil))
	var got string
	res, err := client(s, llmhttptest.NewClock(start)).Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
	if err != nil || res.Attempts != 2 || res.Body != nil {
		t.Errorf("Do = %v after %d attempts, Body %q; want the stream's answer and no body kept", err, res.Attempts, res.Body)
	}
	s = newServer(t, status(500), status(502))
	c := client(s, llmhttptest.NewClock(start))
	c.Retries = 1
	res, _ = c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got))
	if !strings.Contains(string(res.Body), "status 502") {
		t.Errorf("Body = %q, want the last error body", res.Body)
	}
}

// Another wire format is a Format, not another client: its path and its
// headers, the same retries and scrubbing.
func TestDo_OtherFormat(t *testing.T) {
	s := newServer(t, status(529), ok)
	c := client(s, llmhttptest.NewClock(start))
	c.Format = &llmhttp.Format{Name: "messages", Path: "/v1/messages", Auth: func(h http.Header, key string) {
		h.Set("x-api-key", key)
		h.Set("anthropic-version", "2023-06-01")
	}}
	var got string
	res, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{"model":"claude"}`)}, lines(&got))
	if err != nil || res.Attempts != 2 || got != `{"answer":"fine"}` {
		t.Fatalf("Do = %v after %d attempts", err, res.Attempts)
	}
	h := s.headers[0]
	if s.paths[0] != "/v1/messages" || h.Get("x-api-key") != testKey || h.Get("anthropic-version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Errorf("sent %s with %v", s.paths[0], h)
	}
	if c.Endpoint() != s.URL+"/v1/messages" {
		t.Errorf("Endpoint() = %q", c.Endpoint())
	}
}

func TestRedactURL(t *testing.T) {
	if got := llmhttp.RedactURL("http://me:pw@host:8/v1/chat/completions?key=k"); got != "http://host:8/v1/chat/completions?…" {
		t.Errorf("RedactURL = %q", got)
	}
}

// The formats inspect ask sends: each its path and the headers its API
// documents for the key (and Anthropic's version header).
func TestFormats(t *testing.T) {
	tests := []struct {
		f      *llmhttp.Format
		path   string
		header map[string]string
	}{
		{llmhttp.OpenAIChat, "/chat/completions", map[string]string{"Authorization": "Bearer " + testKey, "x-api-key": ""}},
		{llmhttp.OpenAIResponses, "/responses", map[string]string{"Authorization": "Bearer " + testKey, "x-api-key": ""}},
		{llmhttp.Anthropic, "/v1/messages", map[string]string{"x-api-key": testKey, "anthropic-version": "2023-06-01", "Authorization": ""}},
		{llmhttp.AnthropicBearer, "/v1/messages", map[string]string{"Authorization": "Bearer " + testKey, "anthropic-version": "2023-06-01", "x-api-key": ""}},
	}
	for _, tt := range tests {
		s := newServer(t, ok)
		c := client(s, llmhttptest.NewClock(start))
		c.Format = tt.f
		var got string
		if _, err := c.Do(context.Background(), &llmhttp.Call{Body: []byte(`{}`)}, lines(&got)); err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if s.paths[0] != tt.path {
			t.Errorf("%s: posted to %s", tt.path, s.paths[0])
		}
		for k, v := range tt.header {
			if g := s.headers[0].Get(k); g != v {
				t.Errorf("%s: header %s = %q, want %q", tt.path, k, g, v)
			}
		}
	}
}
