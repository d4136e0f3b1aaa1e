// Package openaicompat is the model provider for any OpenAI-compatible chat
// completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, DeepSeek…),
// built on go-openai. It retries 429, 5xx, timeouts and transport failures
// with bounded exponential backoff, and captures the exact request and
// response bytes on the wire so the run records what was really sent.
package openaicompat

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/runtime/model"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of Config.
const (
	DefaultBaseURL = "https://api.openai.com/v1"
	DefaultRetries = 3
	DefaultBackoff = time.Second
	DefaultTimeout = 2 * time.Minute
	maxBackoff     = 30 * time.Second
	// MaxRetryAfter caps the wait a server's Retry-After asks for, so a
	// retry is always bounded.
	MaxRetryAfter = time.Minute
)

// Config configures a Provider. The key is used for the Authorization header
// only; it is never recorded or printed.
type Config struct {
	APIKey  string
	BaseURL string        // "" = DefaultBaseURL
	Retries int           // extra attempts after the first; < 0 = none, 0 = DefaultRetries
	Backoff time.Duration // wait before the first retry, doubled each time (capped at 30s); 0 = DefaultBackoff
	Timeout time.Duration // per attempt; 0 = DefaultTimeout
	// MaxRetryAfter caps the wait a server's Retry-After asks for; 0 =
	// MaxRetryAfter.
	MaxRetryAfter time.Duration
	// Transport is the base round tripper; nil = http.DefaultTransport.
	Transport http.RoundTripper
}

// FromEnv reads OPENAI_API_KEY and OPENAI_BASE_URL through getenv.
func FromEnv(getenv func(string) string) Config {
	return Config{APIKey: getenv("OPENAI_API_KEY"), BaseURL: getenv("OPENAI_BASE_URL")}
}

// Provider is an OpenAI-compatible model.Provider. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	client *openai.Client
	redact *secret.Redactor
}

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	switch {
	case cfg.Retries == 0:
		cfg.Retries = DefaultRetries
	case cfg.Retries < 0:
		cfg.Retries = 0
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = MaxRetryAfter
	}
	base := cfg.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	// The boundary of DESIGN §11: every response body is redacted as it
	// arrives, before go-openai reads it, so neither the stored response,
	// nor the message sent back to the model, nor an error holds the key.
	red := secret.New(cfg.APIKey, secret.Password(cfg.BaseURL))
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = &http.Client{Transport: &capture{base: base, redact: red}}
	return &Provider{cfg: cfg, client: openai.NewClientWithConfig(oc), redact: red}
}

// BaseURL is the endpoint the provider talks to.
func (p *Provider) BaseURL() string { return p.cfg.BaseURL }

// Complete sends req, retrying what is worth retrying. Every error it
// returns is redacted (the key, header values, the base URL's password).
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	resp, err := p.complete(ctx, req)
	var ce *model.CallError
	if errors.As(err, &ce) {
		ce.Reason = p.redact.String(ce.Reason)
	}
	return resp, err
}

func (p *Provider) complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	wire := &wireCall{sent: req.Sent}
	ctx = context.WithValue(ctx, wireKey{}, wire)
	var last error
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
		resp, err := p.client.CreateChatCompletion(actx, req.Body)
		cancel()
		if err == nil {
			if len(resp.Choices) == 0 {
				return nil, &model.CallError{Reason: "the response has no choices; check that the endpoint speaks the chat completions API",
					Attempts: attempt + 1, Body: wire.response()}
			}
			out := &model.Response{Message: resp.Choices[0].Message, Body: wire.response(), Attempts: attempt + 1}
			out.Message.Role = openai.ChatMessageRoleAssistant
			out.Usage = model.Usage{In: int64(resp.Usage.PromptTokens), Out: int64(resp.Usage.CompletionTokens)}
			if d := resp.Usage.PromptTokensDetails; d != nil {
				out.Usage.Cached, out.Usage.CachedReported = int64(d.CachedTokens), true
			}
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		status, retry, reason := classify(err, p.cfg.Timeout)
		// the body of this attempt's response, if one came: kept to
		// diagnose the failure (an error body, a malformed reply)
		body, after := wire.last()
		last = &model.CallError{Status: status, Reason: reason, Attempts: attempt + 1, Body: body}
		if !retry {
			return nil, last
		}
		if attempt >= p.cfg.Retries {
			ce := last.(*model.CallError)
			ce.Reason = fmt.Sprintf("%s (gave up after %d attempts; check OPENAI_BASE_URL and the provider's status)", ce.Reason, attempt+1)
			return nil, ce
		}
		wait := min(p.cfg.Backoff<<attempt, maxBackoff)
		if after > 0 {
			wait = min(after, p.cfg.MaxRetryAfter) // the server's word, bounded
		}
		if req.Retry != nil {
			what := reason
			if status != 0 {
				what = fmt.Sprintf("HTTP %d: %s", status, reason)
			}
			req.Retry(model.RetryWait{Attempt: attempt + 1, Attempts: p.cfg.Retries + 1, Wait: wait, RetryAfter: after, Reason: p.redact.String(what)})
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

// classify says whether err is worth another attempt, and describes it.
func classify(err error, timeout time.Duration) (status int, retry bool, reason string) {
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
		reason = apiErr.Message
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
		reason = strings.TrimSpace(string(reqErr.Body))
		if reason == "" && reqErr.Err != nil {
			reason = reqErr.Err.Error()
		}
	case errors.Is(err, context.DeadlineExceeded):
		return 0, true, fmt.Sprintf("no response within %s", timeout)
	default:
		return 0, true, err.Error()
	}
	if len(reason) > 300 {
		reason = reason[:300] + "…"
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		reason += "; check OPENAI_API_KEY"
	}
	return status, status == http.StatusTooManyRequests || status >= 500 || status == http.StatusRequestTimeout, reason
}

type wireKey struct{}

// wireCall collects the bytes of one logical call across its attempts.
type wireCall struct {
	sent func([]byte)
	once sync.Once
	mu   sync.Mutex
	resp []byte
	// after is the latest response's Retry-After, 0 when it had none.
	after time.Duration
}

func (w *wireCall) response() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.resp
}

// last returns the latest attempt's response body and Retry-After, and
// forgets them, so the next attempt's failure never shows this one's.
func (w *wireCall) last() ([]byte, time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, a := w.resp, w.after
	w.resp, w.after = nil, 0
	return b, a
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

// capture is the round tripper go-openai sends through: it hands the exact
// request body to the call's Sent hook (first attempt) and keeps the
// response body.
type capture struct {
	base   http.RoundTripper
	redact *secret.Redactor
}

func (c *capture) RoundTrip(r *http.Request) (*http.Response, error) {
	w, _ := r.Context().Value(wireKey{}).(*wireCall)
	if w != nil && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		if w.sent != nil {
			w.once.Do(func() { w.sent(body) })
		}
	}
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, c.redact.Error(err)
	}
	if w == nil {
		return resp, nil
	}
	rb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, c.redact.Error(err)
	}
	rb = c.redact.Bytes(rb)
	resp.Body = io.NopCloser(bytes.NewReader(rb))
	w.mu.Lock()
	w.resp = rb
	w.after = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	w.mu.Unlock()
	return resp, nil
}
