// Package openaicompat is the model provider for any OpenAI-compatible chat
// completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server, DeepSeek…).
// It encodes the request with encoding/json (go-openai's request types),
// sends those exact bytes through internal/llmhttp — the HTTP client inspect
// ask uses too, with its one retry policy: 408, 429, 5xx, timeouts and
// transport failures retried with doubling backoff, Retry-After honoured —
// and records what was really sent and received.
package openaicompat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/inspect-dev/inspect/internal/llmhttp"
	"github.com/inspect-dev/inspect/runtime/model"
	openai "github.com/sashabaranov/go-openai"
)

// Defaults of Config.
const (
	DefaultBaseURL = llmhttp.OpenAIBaseURL
	DefaultRetries = llmhttp.DefaultRetries
	DefaultBackoff = llmhttp.DefaultBackoff
	DefaultTimeout = llmhttp.DefaultHeaderTimeout
	// MaxRetryAfter caps the wait a server's Retry-After asks for, so a
	// retry is always bounded.
	MaxRetryAfter = llmhttp.DefaultMaxRetryAfter
)

// Config configures a Provider. The key is used for the Authorization header
// only; it is never recorded or printed.
type Config struct {
	APIKey  string
	BaseURL string // "" = DefaultBaseURL
	// Retries is how many times a call may be retried after its first
	// attempt: 0 = DefaultRetries, < 0 = none (llmhttp.Client.Retries).
	Retries int
	Backoff time.Duration // wait before the first retry, doubled each time (capped at 30s); 0 = DefaultBackoff
	// Timeout bounds, for each attempt, the wait for the response to start
	// and any silence inside it; 0 = DefaultTimeout.
	Timeout time.Duration
	// MaxRetryAfter caps the wait a server's Retry-After asks for; 0 =
	// MaxRetryAfter.
	MaxRetryAfter time.Duration
	// Transport is the base round tripper; nil = http.DefaultTransport.
	Transport http.RoundTripper
	// Clock is what the provider waits by between attempts (nil = the wall
	// clock); tests inject one that does not sleep.
	Clock llmhttp.Clock
}

// FromEnv reads OPENAI_API_KEY and OPENAI_BASE_URL through getenv.
func FromEnv(getenv func(string) string) Config {
	return Config{APIKey: getenv("OPENAI_API_KEY"), BaseURL: getenv("OPENAI_BASE_URL")}
}

// Provider is an OpenAI-compatible model.Provider. It is safe for concurrent use.
type Provider struct {
	timeout time.Duration
	client  *llmhttp.Client
}

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	if cfg.Backoff <= 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	c := llmhttp.New(cfg.APIKey, cfg.BaseURL)
	c.Retries = cfg.Retries
	c.Backoff = llmhttp.Doubling(cfg.Backoff)
	c.MaxRetryAfter = cfg.MaxRetryAfter
	c.HeaderTimeout, c.IdleTimeout = cfg.Timeout, cfg.Timeout
	c.Clock = cfg.Clock
	if cfg.Transport != nil {
		c.HTTP = &http.Client{Transport: cfg.Transport}
	}
	return &Provider{timeout: cfg.Timeout, client: c}
}

// BaseURL is the endpoint the provider talks to.
func (p *Provider) BaseURL() string { return p.client.BaseURL }

// Complete sends req, retrying what is worth retrying. Every error it
// returns is redacted (the key, header values, the base URL's password).
func (p *Provider) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	body, err := json.Marshal(req.Body)
	if err != nil {
		return nil, &model.CallError{Reason: fmt.Sprintf("encode the request: %v", err)}
	}
	call := &llmhttp.Call{Body: body, Model: req.Body.Model, Sent: req.Sent}
	if req.Retry != nil {
		call.OnRetry = func(r llmhttp.Retry) {
			status, reason := p.describe(r.Err)
			what := reason
			if status != 0 {
				what = fmt.Sprintf("HTTP %d: %s", status, reason)
			}
			req.Retry(model.RetryWait{Attempt: r.Attempt, Attempts: r.Attempts, Wait: r.Wait, RetryAfter: r.RetryAfter, Reason: p.client.Scrub(what)})
		}
	}
	var resp openai.ChatCompletionResponse
	res, err := p.client.Do(ctx, call, func(b *llmhttp.Body) error {
		data, err := b.Bytes()
		if err != nil {
			return err
		}
		// a decoder, as go-openai read it: what follows the first value is ignored
		return json.NewDecoder(bytes.NewReader(data)).Decode(&resp)
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, err
		}
		status, reason := p.describe(err)
		if res.GaveUp {
			reason = fmt.Sprintf("%s (gave up after %d attempts; check OPENAI_BASE_URL and the provider's status)", reason, res.Attempts)
		}
		// the body of the last response, if one came: kept to diagnose the
		// failure (an error body, a malformed reply)
		return nil, &model.CallError{Status: status, Reason: p.client.Scrub(reason), Attempts: res.Attempts, Body: res.Body}
	}
	if len(resp.Choices) == 0 {
		return nil, &model.CallError{Reason: "the response has no choices; check that the endpoint speaks the chat completions API",
			Attempts: res.Attempts, Body: res.Body}
	}
	out := &model.Response{Message: resp.Choices[0].Message, Body: res.Body, Attempts: res.Attempts}
	out.Message.Role = openai.ChatMessageRoleAssistant
	out.Usage = model.Usage{In: int64(resp.Usage.PromptTokens), Out: int64(resp.Usage.CompletionTokens)}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		out.Usage.Cached, out.Usage.CachedReported = int64(d.CachedTokens), true
	}
	return out, nil
}

// describe says what failed, as a run's error and progress lines put it:
// the HTTP status when there was one, and a reason.
func (p *Provider) describe(err error) (status int, reason string) {
	var apiErr *llmhttp.APIError
	var te *llmhttp.TimeoutError
	var ue *llmhttp.UnreachableError
	switch {
	case errors.As(err, &apiErr):
		status, reason = apiErr.StatusCode, apiErr.Message
	case errors.As(err, &te):
		return 0, fmt.Sprintf("no response within %s", p.timeout)
	case errors.As(err, &ue):
		return 0, ue.Err.Error()
	default:
		return 0, err.Error()
	}
	if len(reason) > 300 {
		reason = reason[:300] + "…"
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		reason += "; check OPENAI_API_KEY"
	}
	return status, reason
}
