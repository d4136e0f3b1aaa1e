// Package llmhttp is the one HTTP client of inspect for model providers:
// the runtime's OpenAI-compatible provider (runtime/openaicompat) and
// inspect ask both send through it. It is format-neutral — a Format says
// where a body is posted and how the key is sent; the caller reads a
// successful response in its own format — so another wire format
// (Anthropic Messages, OpenAI Responses) is a Format and a reader, not a
// second client.
//
// What it does for every format:
//
//   - it POSTs the body it is given byte for byte, on every attempt, and
//     tells the caller the bytes once, before the first attempt goes out
//     (the recorded request is what went on the wire);
//   - it reads a JSON response whole, or an event stream
//     (text/event-stream) as it arrives, bounded by HeaderTimeout (the wait
//     for the response to start) and IdleTimeout (a silence inside it);
//   - it retries by one policy (Client.Retries, Client.Backoff, RetryStatus
//     and the rules of Do), honouring Retry-After;
//   - it scrubs the key and the base URL's password from everything that
//     comes back — error bodies (also when the key is JSON-escaped, as in
//     "\u0073k-…"), the answer's text as it streams (a key split across
//     events included), error messages — through internal/secret;
//   - a stream that stops before the format says the answer is finished is
//     a *CutOffError holding what arrived, never retried.
package llmhttp

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

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/secret"
)

// The retry policy and the timeouts, by default.
const (
	// DefaultRetries is how many times a call is retried when
	// Client.Retries is 0.
	DefaultRetries = 3
	// DefaultBackoff is the wait before the first retry; it doubles for
	// each retry after it, up to MaxBackoff.
	DefaultBackoff = time.Second
	// MaxBackoff caps the doubling wait.
	MaxBackoff = 30 * time.Second
	// DefaultMaxRetryAfter caps the wait a server's Retry-After asks for
	// when Client.MaxRetryAfter is 0, so a retry is always bounded.
	DefaultMaxRetryAfter = time.Minute
	// DefaultHeaderTimeout bounds the wait for a response to start.
	DefaultHeaderTimeout = 2 * time.Minute
	// DefaultIdleTimeout bounds the silence inside a response.
	DefaultIdleTimeout = 90 * time.Second
	// NoRetries, as Client.Retries, sends a call once.
	NoRetries = -1
	// maxErrorBody is how much of an error response is read.
	maxErrorBody = 1 << 20
)

// OpenAIBaseURL is the OpenAI API, the base URL when none is given.
const OpenAIBaseURL = "https://api.openai.com/v1"

// Format is what a wire format adds to the HTTP layer.
type Format struct {
	// Name names the format in messages.
	Name string
	// Path is appended to Client.BaseURL: the endpoint calls are posted to.
	Path string
	// Auth sets the headers that carry the key, and any header the format
	// requires on every call (Anthropic's anthropic-version, for one).
	Auth func(h http.Header, key string)
}

// OpenAIChat is the OpenAI Chat Completions API (and every server that
// speaks it: vLLM, Ollama, llama.cpp server, DeepSeek…): POST
// /chat/completions with the key as a bearer token.
var OpenAIChat = &Format{Name: "chat completions", Path: "/chat/completions",
	Auth: func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }}

// OpenAIResponses is the OpenAI Responses API: POST /responses with the
// key as a bearer token.
var OpenAIResponses = &Format{Name: "responses", Path: "/responses",
	Auth: func(h http.Header, key string) { h.Set("Authorization", "Bearer "+key) }}

// AnthropicBaseURL is the Anthropic API's root, as ANTHROPIC_BASE_URL
// names it in Anthropic's SDKs and Claude Code (the version is part of
// the path).
const AnthropicBaseURL = "https://api.anthropic.com"

// AnthropicVersion is the anthropic-version header sent with every call.
const AnthropicVersion = "2023-06-01"

// Anthropic is the Anthropic Messages API: POST /v1/messages with the key
// in x-api-key and the anthropic-version header.
var Anthropic = &Format{Name: "messages", Path: "/v1/messages",
	Auth: func(h http.Header, key string) {
		h.Set("x-api-key", key)
		h.Set("anthropic-version", AnthropicVersion)
	}}

// AnthropicBearer is the Anthropic Messages API reached with a bearer
// token instead of an API key (ANTHROPIC_AUTH_TOKEN, as a gateway takes).
var AnthropicBearer = &Format{Name: "messages", Path: "/v1/messages",
	Auth: func(h http.Header, key string) {
		h.Set("Authorization", "Bearer "+key)
		h.Set("anthropic-version", AnthropicVersion)
	}}

// Doer sends one HTTP request (*http.Client is one).
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Clock is the time a Client waits by: between attempts, and to read a
// Retry-After date. Tests give one that returns at once and records the
// waits.
type Clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx is done (then it returns ctx's error).
	Sleep(ctx context.Context, d time.Duration) error
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Client sends model calls to one provider. Set its fields before the
// first call; it is then safe for concurrent use.
type Client struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1.
	BaseURL string
	// Format is the wire format (nil = OpenAIChat).
	Format *Format
	// HTTP sends the requests (nil = a plain *http.Client).
	HTTP Doer

	// Retries is how many times a call may be retried after its first
	// attempt: 0 means DefaultRetries, NoRetries (any negative value)
	// means none. One meaning everywhere.
	Retries int
	// Backoff is the wait before retry n (1, 2, …) when the server sent
	// no Retry-After; nil = Doubling(DefaultBackoff): 1s, 2s, 4s, … capped
	// at MaxBackoff.
	Backoff func(retry int) time.Duration
	// MaxRetryAfter caps the wait a Retry-After asks for (0 =
	// DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// HeaderTimeout bounds the wait for a response to start, IdleTimeout
	// the silence between two reads of it; each attempt has its own, and 0
	// means no bound. New sets the defaults.
	HeaderTimeout, IdleTimeout time.Duration
	// Clock is the time waited by (nil = the wall clock).
	Clock Clock

	key    string
	redact *secret.Redactor
}

// New returns a client for the provider at baseURL (OpenAIBaseURL when
// empty) that sends key, with the default retry policy and timeouts.
func New(key, baseURL string) *Client {
	if baseURL == "" {
		baseURL = OpenAIBaseURL
	}
	return &Client{
		BaseURL:       strings.TrimRight(baseURL, "/"),
		HeaderTimeout: DefaultHeaderTimeout,
		IdleTimeout:   DefaultIdleTimeout,
		key:           key,
		redact:        secret.New(key, secret.Password(baseURL)),
	}
}

// Doubling is the backoff that waits first, doubling it for each retry
// after the first, capped at MaxBackoff.
func Doubling(first time.Duration) func(int) time.Duration {
	return func(retry int) time.Duration {
		d := first
		for i := 1; i < retry && d < MaxBackoff; i++ {
			d *= 2
		}
		return min(d, MaxBackoff)
	}
}

// RetryStatus reports whether a response with this HTTP status is worth
// another attempt: 408 (request timeout), 429 (rate limited) and every
// 5xx. Any other status is the provider's answer and is returned as it is.
func RetryStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

func (c *Client) format() *Format {
	if c.Format == nil {
		return OpenAIChat
	}
	return c.Format
}

func (c *Client) clock() Clock {
	if c.Clock == nil {
		return wallClock{}
	}
	return c.Clock
}

func (c *Client) retries() int {
	switch {
	case c.Retries == 0:
		return DefaultRetries
	case c.Retries < 0:
		return 0
	}
	return c.Retries
}

func (c *Client) backoff(retry int) time.Duration {
	if c.Backoff == nil {
		return Doubling(DefaultBackoff)(retry)
	}
	return c.Backoff(retry)
}

func (c *Client) maxRetryAfter() time.Duration {
	if c.MaxRetryAfter <= 0 {
		return DefaultMaxRetryAfter
	}
	return c.MaxRetryAfter
}

// Endpoint is the URL calls are posted to, without any credentials.
func (c *Client) Endpoint() string {
	return RedactURL(strings.TrimRight(c.BaseURL, "/") + c.format().Path)
}

// RedactURL removes credentials (user info, query values, which may hold a
// key) from a URL so it can be printed or stored.
func RedactURL(s string) string {
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

// Scrub replaces the key, header values and URL passwords in s with
// [redacted]; callers use it on text that came back from the provider.
func (c *Client) Scrub(s string) string { return c.redact.String(s) }

// Call is one model call.
type Call struct {
	// Body is sent as it is, on every attempt.
	Body []byte
	// Model is the model the body names, for errors.
	Model string
	// Sent, if set, receives Body once, just before the first attempt is
	// sent.
	Sent func(body []byte)
	// OnRetry, if set, is told of each retry before the client waits for it.
	OnRetry func(Retry)
	// OnText, if set, receives the answer's text as the reader delivers it
	// (Body.Deliver), scrubbed even when a key is split across pieces.
	OnText func(string)
}

// Retry is a retry the client is about to wait for.
type Retry struct {
	// Attempt is the attempt that failed (from 1); Attempts how many the
	// client makes in all.
	Attempt, Attempts int
	// Wait is how long it waits before the next attempt.
	Wait time.Duration
	// RetryAfter is the wait the server asked for, 0 when none; Wait is it,
	// capped at MaxRetryAfter.
	RetryAfter time.Duration
	// Err is why the attempt failed (scrubbed).
	Err error
}

// Result is how a call went, returned by Do whatever its error.
type Result struct {
	// Attempts is how many times the body was sent.
	Attempts int
	// Body is the last response body read whole (an error body, or a
	// success body the reader took with Body.Bytes), scrubbed; nil when
	// none was (a stream, or no response at all).
	Body []byte
	// GaveUp says the last attempt failed in a way worth retrying, but no
	// retry was left.
	GaveUp bool
}

// ErrIncomplete is what a reader returns when the response ended cleanly
// but the format says the answer is not finished (a stream without its
// finish reason): Do makes it a *CutOffError.
var ErrIncomplete = errors.New("the response ended before the end of the answer")

// Reader reads a successful (2xx) response in the caller's format.
type Reader func(b *Body) error

// Do sends call and hands a successful response to read. The rules, which
// are the retry policy with Client.Retries and Client.Backoff:
//
//   - not being able to reach the provider, or no response starting within
//     HeaderTimeout, is retried;
//   - an error status is an *APIError, retried when RetryStatus says so;
//   - a response that breaks off (a read error, or a silence past
//     IdleTimeout) is retried while none of its text was delivered
//     (Body.Deliver);
//   - read's own errors (a body the format cannot read) are returned as
//     they are, never retried;
//   - once text was delivered, any failure is a *CutOffError holding what
//     was, except an error event in the stream (*chat.StreamError: the
//     provider's word, returned as it is); so is ErrIncomplete;
//   - the wait before a retry is the server's Retry-After (seconds or an
//     HTTP date), capped at MaxRetryAfter, else Backoff(n);
//   - a cancelled ctx ends the call with ctx's error, at once (a
//     *CutOffError when part of the answer was delivered).
//
// Every error is scrubbed of the key and the base URL's password.
func (c *Client) Do(ctx context.Context, call *Call, read Reader) (*Result, error) {
	res := &Result{}
	var text strings.Builder // what was delivered, for a cut-off
	var stream *secret.Stream
	if call.OnText != nil {
		stream = c.redact.Stream(call.OnText)
		defer stream.Close()
	}
	deliver := func(s string) {
		text.WriteString(s)
		if stream != nil {
			stream.Write(s)
		}
	}
	attempts := c.retries() + 1
	for attempt := 1; ; attempt++ {
		if attempt == 1 && call.Sent != nil {
			call.Sent(call.Body)
		}
		res.Attempts, res.Body = attempt, nil // an earlier attempt's body is not this one's
		retry, after, err := c.attempt(ctx, call, attempt, res, deliver, &text, read)
		if err == nil {
			return res, nil
		}
		var cut *CutOffError
		if ctx.Err() != nil && !errors.As(err, &cut) {
			return res, ctx.Err() // a cut-off keeps what arrived before the cancel
		}
		err = c.redact.Error(err)
		if !retry {
			return res, err
		}
		if attempt >= attempts {
			res.GaveUp = true
			return res, err
		}
		wait := c.backoff(attempt)
		if after > 0 {
			wait = min(after, c.maxRetryAfter()) // the server's word, bounded
		}
		if call.OnRetry != nil {
			call.OnRetry(Retry{Attempt: attempt, Attempts: attempts, Wait: wait, RetryAfter: after, Err: err})
		}
		if err := c.clock().Sleep(ctx, wait); err != nil {
			return res, err
		}
	}
}

// attempt sends the body once. retry says whether its failure may be
// retried; after is the server's Retry-After.
func (c *Client) attempt(ctx context.Context, call *Call, attempt int, res *Result, deliver func(string), text *strings.Builder, read Reader) (retry bool, after time.Duration, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Value // string: what was awaited when a timeout fired
	watch := func(d time.Duration, waiting string) *time.Timer {
		if d <= 0 {
			return time.NewTimer(time.Duration(1<<63 - 1))
		}
		return time.AfterFunc(d, func() { timedOut.Store(waiting); cancel() })
	}
	timeout := func(d time.Duration) error {
		w, _ := timedOut.Load().(string)
		return &TimeoutError{Endpoint: c.Endpoint(), After: d, Waiting: w, Attempts: attempt}
	}
	f := c.format()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+f.Path, bytes.NewReader(call.Body))
	if err != nil {
		return false, 0, fmt.Errorf("build request: %w", err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(call.Body)), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if f.Auth != nil {
		f.Auth(req.Header, c.key)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}

	t := watch(c.HeaderTimeout, "the response to start")
	resp, err := hc.Do(req)
	t.Stop()
	if err != nil {
		if timedOut.Load() != nil {
			return true, 0, timeout(c.HeaderTimeout)
		}
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return false, 0, err
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return true, 0, &TimeoutError{Endpoint: c.Endpoint(), After: c.HeaderTimeout, Waiting: "the response to start", Attempts: attempt}
		}
		return true, 0, &UnreachableError{Endpoint: c.Endpoint(), Attempts: attempt, Err: err}
	}
	defer resp.Body.Close()

	// Every read of the body resets the idle watch.
	idle := watch(c.IdleTimeout, "more of the response")
	defer idle.Stop()
	b := &Body{Header: resp.Header, c: c, res: res, deliver: deliver, r: resp.Body,
		reset: func() {
			if c.IdleTimeout > 0 {
				idle.Reset(c.IdleTimeout)
			}
		},
		timedOut: func() error {
			if timedOut.Load() != nil {
				return timeout(c.IdleTimeout)
			}
			return nil
		}}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		after = retryAfter(resp.Header.Get("Retry-After"), c.clock().Now())
		data, err := io.ReadAll(io.LimitReader(b, maxErrorBody))
		if err != nil && b.timedOut() != nil {
			return true, after, b.timedOut()
		}
		data = c.redact.JSON(data, nil) // a JSON body stays JSON
		res.Body = data
		apiErr := &APIError{StatusCode: resp.StatusCode, Model: call.Model, Endpoint: c.Endpoint(), Attempts: attempt, RetryAfter: after, Body: data}
		var eb *chat.ErrorBody
		if _, err := chat.ReadResponse(data, ""); errors.As(err, &eb) {
			apiErr.Message, apiErr.Type, apiErr.Code, apiErr.ErrorObject = eb.Message, eb.Type, eb.Code, true
		} else {
			apiErr.Message = strings.TrimSpace(string(data))
			if len(apiErr.Message) > 300 {
				apiErr.Message = apiErr.Message[:300] + "…"
			}
		}
		apiErr.Message = c.Scrub(apiErr.Message)
		return RetryStatus(resp.StatusCode), after, apiErr
	}

	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	b.Stream = ct == "text/event-stream"
	err = read(b)
	var se *chat.StreamError
	switch {
	case err == nil:
		return false, 0, nil
	case errors.Is(err, ErrIncomplete):
		return false, 0, &CutOffError{Endpoint: c.Endpoint(), Text: c.Scrub(text.String())}
	case errors.As(err, &se):
		return false, 0, err // the provider's word
	case b.delivered:
		// part of the answer is out: it is cut off, not retried
		if te := b.timedOut(); te != nil {
			err = te
		}
		return false, 0, &CutOffError{Endpoint: c.Endpoint(), Text: c.Scrub(text.String()), Err: err}
	case b.broken:
		if te := b.timedOut(); te != nil {
			return true, 0, te
		}
		return true, 0, err
	}
	return false, 0, err
}

// Body is a successful response, for a Reader: an io.Reader of its body
// (each read resets the idle watch), and where the answer's text goes.
type Body struct {
	// Header is the response's header.
	Header http.Header
	// Stream says the body is an event stream (text/event-stream).
	Stream bool

	c         *Client
	res       *Result
	r         io.Reader
	reset     func()
	timedOut  func() error
	deliver   func(string)
	delivered bool
	broken    bool // a read failed: the response broke off
}

// Read reads the body. A read error marks the response as broken off
// (retried when nothing was delivered); a silence past IdleTimeout reads
// as a *TimeoutError.
func (b *Body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.reset()
	if err != nil && err != io.EOF {
		b.broken = true
		if te := b.timedOut(); te != nil {
			err = te
		}
	}
	return n, err
}

// Bytes reads the whole body, scrubbed, and keeps it as the Result's Body.
func (b *Body) Bytes() ([]byte, error) {
	data, err := io.ReadAll(b)
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	data = b.c.redact.JSON(data, nil) // a JSON body stays JSON
	b.res.Body = data
	return data, nil
}

// Deliver passes a piece of the answer's text on to Call.OnText. Once
// text is delivered the call is never retried: a response that breaks off
// after it is a *CutOffError.
func (b *Body) Deliver(s string) {
	if s == "" {
		return
	}
	b.delivered = true
	b.deliver(s)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
