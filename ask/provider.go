package ask

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/internal/llmhttp"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// Provider is an API an ask is sent to: its wire format, where the key
// and the base URL come from, and the base URL when none is given.
type Provider struct {
	// Name is what --provider calls it.
	Name string
	// Title is what a person calls its API.
	Title string
	// Format is the wire format of its bodies.
	Format chat.Format
	// KeyEnv is the environment variable that holds its key; BearerEnv,
	// when set, one that holds a bearer token instead (used when KeyEnv
	// is empty).
	KeyEnv, BearerEnv string
	// BaseURLEnv is the environment variable that names its base URL.
	BaseURLEnv string
	// DefaultBaseURL is its public API root.
	DefaultBaseURL string

	http, bearer *llmhttp.Format
}

// The providers.
var (
	// Anthropic is the Anthropic Messages API (Claude Code's).
	Anthropic = &Provider{Name: "anthropic", Title: "Anthropic Messages", Format: chat.Anthropic,
		KeyEnv: "ANTHROPIC_API_KEY", BearerEnv: "ANTHROPIC_AUTH_TOKEN", BaseURLEnv: "ANTHROPIC_BASE_URL",
		DefaultBaseURL: llmhttp.AnthropicBaseURL, http: llmhttp.Anthropic, bearer: llmhttp.AnthropicBearer}
	// OpenAIResponses is the OpenAI Responses API (Codex's).
	OpenAIResponses = &Provider{Name: "openai-responses", Title: "OpenAI Responses", Format: chat.OpenAIResponses,
		KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL", DefaultBaseURL: llmhttp.OpenAIBaseURL, http: llmhttp.OpenAIResponses}
	// OpenAIChat is the OpenAI Chat Completions API, which our runtime
	// and every OpenAI-compatible server speak.
	OpenAIChat = &Provider{Name: "openai-chat", Title: "OpenAI Chat Completions", Format: chat.OpenAIChat,
		KeyEnv: "OPENAI_API_KEY", BaseURLEnv: "OPENAI_BASE_URL", DefaultBaseURL: llmhttp.OpenAIBaseURL, http: llmhttp.OpenAIChat}
)

// Providers lists every provider, as --provider names them.
var Providers = []*Provider{Anthropic, OpenAIResponses, OpenAIChat}

// ProviderNames are the names --provider takes, for help and errors.
func ProviderNames() []string {
	out := make([]string, len(Providers))
	for i, p := range Providers {
		out[i] = p.Name
	}
	return out
}

// ProviderNamed returns the provider called name (its Name, or its wire
// format's name: "anthropic-messages"), as an *InputError when none is.
func ProviderNamed(name string) (*Provider, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range Providers {
		if n == p.Name || n == string(p.Format) {
			return p, nil
		}
	}
	return nil, inputf("unknown --provider %q: the providers are %s", name, strings.Join(ProviderNames(), ", "))
}

// ProviderOf is the provider of a wire format.
func ProviderOf(f chat.Format) *Provider {
	for _, p := range Providers {
		if p.Format == f {
			return p
		}
	}
	return OpenAIChat
}

// Endpoint is where the provider at base posts a call.
func (p *Provider) Endpoint(base string) string {
	return Redact(strings.TrimRight(base, "/") + p.http.Path)
}

// ModelsURL is where the provider at base lists the models it serves.
func (p *Provider) ModelsURL(base string) string {
	base = strings.TrimRight(base, "/")
	if p == Anthropic {
		return Redact(base + "/v1/models")
	}
	return Redact(base + "/models")
}

// pickProvider is the provider of a run's call when --provider does not
// name one: an exact request goes back in its own format; a request in
// another format than Chat Completions (one an importer took from its
// source) in that one; a request an importer rebuilt as Chat Completions
// in the format its stack speaks (stack.Profile.API: Anthropic Messages
// for Claude Code, Responses for Codex); Chat Completions otherwise. why
// says which of these decided.
func pickProvider(exact bool, body chat.Format, src record.Source) (p *Provider, why string) {
	switch {
	case exact:
		return ProviderOf(body), "the format of the request the run sent"
	case body != chat.OpenAIChat:
		return ProviderOf(body), "the format of the recorded request"
	}
	prof := stack.For(src)
	if prof.API != "" {
		return ProviderOf(chat.Format(prof.API)), prof.Name + "'s API"
	}
	return OpenAIChat, fmt.Sprintf("no API is known for %s: the one OpenAI-compatible servers speak", prof.Name)
}
