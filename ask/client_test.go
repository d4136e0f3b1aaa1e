package ask

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/ask/asktest"
	"github.com/inspect-dev/inspect/internal/llmhttp/llmhttptest"
)

// providerBody is a valid question body of each provider's format.
var providerBody = map[*Provider]string{
	Anthropic:       `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"why?"}],"stream":true}`,
	OpenAIResponses: `{"model":"gpt-5","input":[{"role":"user","content":"why?"}],"stream":true}`,
	OpenAIChat:      `{"model":"gpt-4.1","messages":[{"role":"user","content":"why?"}],"stream":true}`,
}

func providerClient(p *Provider, srv *asktest.Server) *Client {
	c := NewProviderClient(p, testKey, false, srv.URL)
	c.Clock = llmhttptest.NewClock(time.Now())
	c.HeaderTimeout, c.IdleTimeout = 2*time.Second, 2*time.Second
	return c
}

// The same client for every provider: each one's streamed and whole
// answers read in its format, its overloaded or rate-limited replies
// retried by the one policy, its stream cut off mid-answer a
// *CutOffError holding what arrived, the key scrubbed from what comes
// back.
func TestClient_SendEveryProvider(t *testing.T) {
	for _, p := range Providers {
		t.Run(p.Name, func(t *testing.T) {
			ctx := context.Background()
			body := []byte(providerBody[p])
			t.Run("stream and JSON", func(t *testing.T) {
				srv := asktest.New(t, testKey)
				srv.Register("answer", nil, asktest.Answer(asktest.Reply{Content: "They are independent, key " + testKey + ".",
					Usage: &openai.Usage{PromptTokens: 100, CompletionTokens: 9, PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: 60}}}))
				for _, b := range [][]byte{body, []byte(strings.Replace(string(body), `,"stream":true`, "", 1))} {
					var deltas []string
					r, err := providerClient(p, srv).Send(ctx, b, func(s string) { deltas = append(deltas, s) })
					if err != nil {
						t.Fatal(err)
					}
					if r.Message.Text != "They are independent, key [redacted]." || strings.Contains(strings.Join(deltas, ""), testKey) {
						t.Errorf("text %q, deltas %q", r.Message.Text, deltas)
					}
					if u := r.Usage; u == nil || u.In != 100 || u.Cached != 60 || u.Out != 9 {
						t.Errorf("usage = %+v", u)
					}
				}
				if bad := srv.Invalid(); len(bad) > 0 {
					t.Errorf("invalid: %+v", bad)
				}
			})
			t.Run("retried", func(t *testing.T) {
				srv := asktest.New(t, testKey)
				srv.Register("busy then fine", nil, asktest.Sequence(
					func(w http.ResponseWriter, r *http.Request, b []byte) {
						w.Header().Set("Retry-After", "3")
						asktest.Error(529, "overloaded_error", "Overloaded")(w, r, b)
					},
					asktest.Answer(asktest.Reply{Content: "ok"})))
				c := providerClient(p, srv)
				clock := llmhttptest.NewClock(time.Now())
				c.Clock = clock
				r, err := c.Send(ctx, body, nil)
				if err != nil || r.Message.Text != "ok" || len(srv.Requests()) != 2 {
					t.Fatalf("Send = %v, %v after %d requests", r, err, len(srv.Requests()))
				}
				if w := clock.Waits(); len(w) != 1 || w[0] != 3*time.Second {
					t.Errorf("waits = %v, want the 3s Retry-After", w)
				}
			})
			t.Run("cut off", func(t *testing.T) {
				srv := asktest.New(t, testKey)
				srv.Register("half", nil, func(w http.ResponseWriter, r *http.Request, b []byte) {
					w.Header().Set("Content-Type", "text/event-stream")
					fmt.Fprint(w, halfStream[p])
					w.(http.Flusher).Flush()
				})
				_, err := providerClient(p, srv).Send(ctx, body, nil)
				var cut *CutOffError
				if !errors.As(err, &cut) || cut.Text != "Because the " || len(srv.Requests()) != 1 {
					t.Errorf("err = %v (%d requests), want a cut-off holding the half, not retried", err, len(srv.Requests()))
				}
			})
		})
	}
}

// halfStream is, per provider, a stream that stops after "Because the ".
var halfStream = map[*Provider]string{
	Anthropic: "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude\",\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Because the \"}}\n\n",
	OpenAIResponses: "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"r\",\"model\":\"gpt-5\"}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Because the \"}\n\n",
	OpenAIChat: "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4.1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Because the \"}}]}\n\n",
}
