package ask

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/llmhttp"
)

// DefaultBaseURL is the OpenAI API, used when neither a flag, the
// environment nor the run names a base URL.
const DefaultBaseURL = llmhttp.OpenAIBaseURL

// Defaults of a Client: llmhttp's, which the runtime's provider shares.
const (
	DefaultRetries       = llmhttp.DefaultRetries       // extra attempts after a 408, a 429, a 5xx, a timeout or a network error
	DefaultHeaderTimeout = llmhttp.DefaultHeaderTimeout // wait for the response to start
	DefaultIdleTimeout   = llmhttp.DefaultIdleTimeout   // longest silence inside a response
)

// The errors a Send returns, llmhttp's.
type (
	// APIError is a provider's error response.
	APIError = llmhttp.APIError
	// TimeoutError is returned when the provider did not start or
	// continue a response in time, after every retry.
	TimeoutError = llmhttp.TimeoutError
	// CutOffError is a streamed answer that stopped before its end.
	CutOffError = llmhttp.CutOffError
	// UnreachableError is returned when the provider could not be reached
	// after every retry.
	UnreachableError = llmhttp.UnreachableError
)

// Client sends request bodies, byte for byte, to a provider in its wire
// format (Provider; Chat Completions by default), through llmhttp's
// client: its fields (Retries, Backoff, HeaderTimeout, IdleTimeout, Clock,
// HTTP) tune the retry policy and the timeouts, the same for every
// provider.
type Client struct {
	*llmhttp.Client
	// Provider is the API posted to; nil = OpenAIChat.
	Provider *Provider
}

// NewClient returns a Client for the OpenAI-compatible provider at
// baseURL (DefaultBaseURL when empty) that authenticates with key, with
// llmhttp's defaults: the same endpoint and retry policy as the runtime's
// provider.
func NewClient(key, baseURL string) *Client {
	return NewProviderClient(OpenAIChat, key, false, baseURL)
}

// NewProviderClient returns a Client for provider p at baseURL (its
// DefaultBaseURL when empty) that sends key as p's API key, or as a
// bearer token when bearer is set (p.BearerEnv's).
func NewProviderClient(p *Provider, key string, bearer bool, baseURL string) *Client {
	if baseURL == "" {
		baseURL = p.DefaultBaseURL
	}
	c := llmhttp.New(key, baseURL)
	c.Format = p.http
	if bearer && p.bearer != nil {
		c.Format = p.bearer
	}
	c.HTTP = &http.Client{}
	return &Client{Client: c, Provider: p}
}

func (c *Client) format() chat.Format {
	if c.Provider == nil {
		return chat.OpenAIChat
	}
	return c.Provider.Format
}

// Redact removes credentials (user info, key-like query values) from a URL
// so it can be printed or stored.
func Redact(s string) string { return llmhttp.RedactURL(s) }

// Send POSTs body unchanged to the provider's endpoint and returns the
// reply, read in the provider's format. A streamed (text/event-stream)
// response is read as it arrives and each piece of text is passed to
// onDelta (which may be nil); a JSON response passes its whole text once.
// The retry policy is llmhttp's (Client.Do): never after part of the
// answer was read; a stream that ends before the format's finish (Chat
// Completions' finish_reason, Anthropic's stop_reason, Responses'
// response.completed) is a *CutOffError.
func (c *Client) Send(ctx context.Context, body []byte, onDelta func(string)) (*chat.Response, error) {
	var reply *chat.Response
	f := c.format()
	call := &llmhttp.Call{Body: body, Model: modelOf(body), OnText: onDelta}
	_, err := c.Do(ctx, call, func(b *llmhttp.Body) error {
		if b.Stream {
			r, err := chat.ReadEventStream(b, f, b.Deliver)
			if err != nil {
				return err
			}
			if r.FinishReason == "" {
				return llmhttp.ErrIncomplete // the stream ended without the model saying it had finished
			}
			reply = r
			return nil
		}
		data, err := b.Bytes()
		if err != nil {
			return err
		}
		r, err := chat.ReadResponse(data, f)
		if err != nil {
			return err
		}
		b.Deliver(r.Message.Text)
		reply = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	reply.Message.Text = c.Scrub(reply.Message.Text)
	return reply, nil
}

// modelOf is the model a request body names, whatever its format.
func modelOf(body []byte) string {
	var b struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &b) == nil {
		return b.Model
	}
	return ""
}
