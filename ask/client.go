package ask

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/secret"
)

// DefaultBaseURL is the OpenAI API, used when neither a flag, the
// environment nor the run names a base URL.
const DefaultBaseURL = "https://api.openai.com/v1"

// Defaults of a Client.
const (
	DefaultRetries       = 3                // extra attempts after a 429, a 5xx, a timeout or a network error
	DefaultHeaderTimeout = 2 * time.Minute  // wait for the response to start
	DefaultIdleTimeout   = 90 * time.Second // longest silence inside a response
	maxRetryAfter        = 30 * time.Second // cap on a server's Retry-After
)

// Client sends chat completions request bodies, byte for byte, to an
// OpenAI-compatible provider.
type Client struct {
	// BaseURL is the API base, e.g. https://api.openai.com/v1; requests go
	// to BaseURL + "/chat/completions".
	BaseURL string
	// HTTP sends the requests.
	HTTP openai.HTTPDoer
	// Retries is how many times a call is retried after a 429, a 5xx, a
	// timeout or a network error, before any of the answer was delivered.
	Retries int
	// Backoff is the wait before retry attempt (1, 2, …); a Retry-After
	// header wins when the server sends one.
	Backoff func(attempt int) time.Duration
	// HeaderTimeout bounds the wait for the response to start.
	HeaderTimeout time.Duration
	// IdleTimeout bounds the silence between two reads of the response.
	IdleTimeout time.Duration

	key    string
	redact *secret.Redactor // the key and the base URL's password
}

// NewClient returns a Client for the provider at baseURL (DefaultBaseURL
// when empty) that authenticates with key. It starts from go-openai's
// DefaultConfig, so it talks to the same endpoint the runtime's provider
// does.
func NewClient(key, baseURL string) *Client {
	cfg := openai.DefaultConfig(key)
	if baseURL != "" {
		cfg.BaseURL = baseURL
	}
	return &Client{
		BaseURL:       strings.TrimRight(cfg.BaseURL, "/"),
		HTTP:          cfg.HTTPClient,
		Retries:       DefaultRetries,
		Backoff:       defaultBackoff,
		HeaderTimeout: DefaultHeaderTimeout,
		IdleTimeout:   DefaultIdleTimeout,
		key:           key,
		redact:        secret.New(key, secret.Password(baseURL)),
	}
}

func defaultBackoff(attempt int) time.Duration {
	return time.Duration(1<<min(attempt-1, 4)) * time.Second // 1s 2s 4s 8s 16s
}

// Endpoint is the URL requests are posted to, without any credentials.
func (c *Client) Endpoint() string {
	return Redact(strings.TrimRight(c.BaseURL, "/") + "/chat/completions")
}

// Redact removes credentials (user info, key-like query values) from a URL
// so it can be printed or stored.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparseable URL)"
	}
	u.User = nil
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	return u.String()
}

// APIError is a provider's error response.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code and Type are the provider's error code and type, when given.
	Code, Type string
	// Message is the provider's message, with the key scrubbed.
	Message string
	// Model is the model the request named.
	Model string
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// Attempts is how many times the request was sent.
	Attempts int
}

// Error says who answered what: endpoint, status, code and message.
func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.StatusCode)
	}
	s := fmt.Sprintf("%s answered %d", e.Endpoint, e.StatusCode)
	if e.Code != "" {
		s += " (" + e.Code + ")"
	}
	s += ": " + msg
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// Unauthorized reports whether the provider refused the key.
func (e *APIError) Unauthorized() bool { return e.StatusCode == http.StatusUnauthorized }

// ModelNotFound reports whether the provider does not serve the model.
func (e *APIError) ModelNotFound() bool {
	if e.Code == "model_not_found" {
		return true
	}
	return e.StatusCode == http.StatusNotFound && strings.Contains(strings.ToLower(e.Message), "model")
}

// TimeoutError is returned when the provider did not start or continue a
// response in time, after every retry.
type TimeoutError struct {
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// After is the timeout that expired.
	After time.Duration
	// Waiting says what was awaited: "the response to start" or "more of the response".
	Waiting string
	// Attempts is how many times the request was sent.
	Attempts int
}

// Error says what was awaited, for how long, after how many attempts.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s: no answer within %s waiting for %s (%d attempts)", e.Endpoint, e.After, e.Waiting, e.Attempts)
}

// CutOffError is a streamed answer that stopped before its end: the
// stream closed, broke or went silent before the provider said the answer
// was finished (a finish_reason). Text is what arrived.
type CutOffError struct {
	// Endpoint is the URL posted to, without credentials.
	Endpoint string
	// Text is the part of the answer that arrived.
	Text string
	// Err is the read error that cut it, nil when the stream simply ended.
	Err error
}

// Error says how much of the answer arrived, and why no more did.
func (e *CutOffError) Error() string {
	why := "the stream ended before the end of the answer"
	if e.Err != nil {
		why = e.Err.Error()
	}
	return fmt.Sprintf("the answer was cut off after %d bytes (%s: %s)", len(e.Text), e.Endpoint, why)
}

// Unwrap returns the read error, if any.
func (e *CutOffError) Unwrap() error { return e.Err }

// UnreachableError is returned when the provider could not be reached
// after every retry.
type UnreachableError struct {
	Endpoint string
	Attempts int
	Err      error
}

// Error names the endpoint, the attempts and the last network error.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s (%d attempts): %v", e.Endpoint, e.Attempts, e.Err)
}

// Unwrap returns the last network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Send POSTs body unchanged to the chat completions endpoint and returns the
// reply. A streamed (text/event-stream) response is read as it arrives and
// each piece of text is passed to onDelta (which may be nil); a JSON
// response passes its whole text once. 429s, 5xx answers, timeouts and
// network errors are retried up to c.Retries times, but never after part of
// the answer reached onDelta.
func (c *Client) Send(ctx context.Context, body []byte, onDelta func(string)) (*chat.Response, error) {
	model := modelOf(body)
	delivered := false
	deliver := onDelta
	var stream *secret.Stream
	if onDelta != nil {
		// Text reaches onDelta redacted, even a key split across events.
		stream = c.redact.Stream(onDelta)
		deliver = func(s string) { delivered = true; stream.Write(s) }
	}
	for attempt := 1; ; attempt++ {
		reply, retry, wait, err := c.send(ctx, body, model, attempt, deliver)
		if stream != nil && (err == nil || !retry || delivered) {
			stream.Close()
		}
		if err == nil {
			reply.Message.Text = c.Scrub(reply.Message.Text)
			return reply, nil
		}
		if !retry || delivered || attempt > c.Retries || ctx.Err() != nil {
			return nil, c.scrub(err)
		}
		if wait == 0 && c.Backoff != nil {
			wait = c.Backoff(attempt)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// send makes one attempt. retry says whether the failure may be retried,
// wait how long the server asked us to wait.
func (c *Client) send(ctx context.Context, body []byte, model string, attempt int, onDelta func(string)) (reply *chat.Response, retry bool, wait time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Value // string: what we were waiting for
	watch := func(d time.Duration, waiting string) *time.Timer {
		if d <= 0 {
			return time.NewTimer(time.Duration(1<<63 - 1))
		}
		return time.AfterFunc(d, func() { timedOut.Store(waiting); cancel() })
	}
	endpoint := strings.TrimRight(c.BaseURL, "/") + "/chat/completions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, false, 0, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.key)
	timeout := func(d time.Duration) error {
		w, _ := timedOut.Load().(string)
		return &TimeoutError{Endpoint: c.Endpoint(), After: d, Waiting: w, Attempts: attempt}
	}

	t := watch(c.HeaderTimeout, "the response to start")
	resp, err := c.HTTP.Do(req)
	t.Stop()
	if err != nil {
		if timedOut.Load() != nil {
			return nil, true, 0, timeout(c.HeaderTimeout)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil, false, 0, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, true, 0, &TimeoutError{Endpoint: c.Endpoint(), After: c.HeaderTimeout, Waiting: "the response to start", Attempts: attempt}
		}
		return nil, true, 0, &UnreachableError{Endpoint: c.Endpoint(), Attempts: attempt, Err: err}
	}
	defer resp.Body.Close()

	// Every read of the body resets the idle watch.
	idle := watch(c.IdleTimeout, "more of the response")
	defer idle.Stop()
	r := &idleReader{r: resp.Body, reset: func() {
		if c.IdleTimeout > 0 {
			idle.Reset(c.IdleTimeout)
		}
	}}
	readErr := func(err error) error {
		if timedOut.Load() != nil {
			return timeout(c.IdleTimeout)
		}
		return err
	}

	if resp.StatusCode != http.StatusOK {
		data, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if err != nil && timedOut.Load() != nil {
			return nil, true, 0, readErr(err)
		}
		apiErr := &APIError{StatusCode: resp.StatusCode, Model: model, Endpoint: c.Endpoint(), Attempts: attempt}
		var eb *chat.ErrorBody
		if _, err := chat.ReadResponse(data, chat.OpenAIChat); errors.As(err, &eb) {
			apiErr.Message, apiErr.Type, apiErr.Code = eb.Message, eb.Type, eb.Code
		} else {
			apiErr.Message = strings.TrimSpace(string(data))
			if len(apiErr.Message) > 300 {
				apiErr.Message = apiErr.Message[:300] + "…"
			}
		}
		apiErr.Message = c.Scrub(apiErr.Message)
		retry := resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
		return nil, retry, retryAfter(resp.Header.Get("Retry-After")), apiErr
	}

	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if ct == "text/event-stream" {
		var got strings.Builder // the answer's text so far
		reply, err := chat.ReadStream(r, func(s string) {
			got.WriteString(s)
			if onDelta != nil {
				onDelta(s)
			}
		})
		var se *chat.StreamError
		switch {
		case err != nil && errors.As(err, &se):
			return nil, false, 0, err
		case err != nil && got.Len() > 0:
			// part of the answer is out: it is cut off, not retried
			return nil, false, 0, &CutOffError{Endpoint: c.Endpoint(), Text: got.String(), Err: readErr(err)}
		case err != nil:
			return nil, true, 0, readErr(err)
		case reply.FinishReason == "":
			// the stream ended without the model saying it had finished
			return nil, false, 0, &CutOffError{Endpoint: c.Endpoint(), Text: reply.Message.Text}
		}
		return reply, false, 0, nil
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, true, 0, readErr(fmt.Errorf("read response: %w", err))
	}
	reply, err = chat.ReadResponse(data, chat.OpenAIChat)
	if err != nil {
		return nil, false, 0, err
	}
	if onDelta != nil && reply.Message.Text != "" {
		onDelta(reply.Message.Text)
	}
	return reply, false, 0, nil
}

// scrub redacts an error's text, whatever the server echoed.
func (c *Client) scrub(err error) error { return c.redact.Error(err) }

// Scrub replaces the key, header values and URL passwords in s with
// [redacted] (the redactor the runtime's provider uses too); callers use it
// on text they store or print that came back from the provider.
func (c *Client) Scrub(s string) string { return c.redact.String(s) }

func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return min(time.Duration(s)*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return 0
}

func modelOf(body []byte) string {
	if r, err := chat.ReadRequest(body, chat.OpenAIChat); err == nil {
		return r.Model
	}
	return ""
}

// idleReader calls reset after every read.
type idleReader struct {
	r     io.Reader
	reset func()
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.reset()
	return n, err
}
