package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/inspect-dev/inspect/runtime/model"
	"github.com/inspect-dev/inspect/runtime/openaicompat"
	"github.com/inspect-dev/inspect/runtime/scripted"
	openai "github.com/sashabaranov/go-openai"
)

// conformance checks the rules every model.Provider keeps, slogtest style:
// each case says which rule it checks; all failures are joined.
func conformance(newProvider func() model.Provider) error {
	var errs []error
	fail := func(rule, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", rule, fmt.Sprintf(format, args...)))
	}
	body := openai.ChatCompletionRequest{Model: "m", Messages: []openai.ChatCompletionMessage{
		{Role: "system", Content: "You are the agent."}, {Role: "user", Content: "hi"}}}

	// Rule: Sent receives the exact body once, and it is the JSON go-openai sends.
	{
		p := newProvider()
		var sent [][]byte
		resp, err := p.Complete(context.Background(), &model.Request{Session: "s", Turn: "s#1", Body: body, Sent: func(b []byte) { sent = append(sent, b) }})
		want, _ := json.Marshal(body)
		switch {
		case err != nil:
			fail("complete", "Complete: %v", err)
		case len(sent) != 1 || !bytes.Equal(sent[0], want):
			fail("sent once, exact", "Sent got %d bodies %q, want one %q", len(sent), sent, want)
		case resp.Message.Role != openai.ChatMessageRoleAssistant || resp.Message.Content == "":
			fail("assistant reply", "reply = %+v, want an assistant message with content", resp.Message)
		case len(resp.Body) == 0 || !json.Valid(resp.Body):
			fail("response body", "Body = %q, want the JSON response", resp.Body)
		case resp.Usage.In <= 0:
			fail("usage", "usage = %+v, want in > 0", resp.Usage)
		}
	}
	// Rule: a cancelled context ends the call with the context's error.
	{
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := newProvider().Complete(ctx, &model.Request{Session: "s", Turn: "s#1", Body: body}); !errors.Is(err, context.Canceled) {
			fail("cancel", "Complete on a cancelled context = %v, want context.Canceled", err)
		}
	}
	// Rule: BaseURL never holds a key.
	if u := newProvider().BaseURL(); u == "" || bytes.Contains([]byte(u), []byte(testKey)) {
		fail("base url", "BaseURL = %q", u)
	}
	return errors.Join(errs...)
}

func TestConformance(t *testing.T) {
	t.Run("scripted", func(t *testing.T) {
		s, err := scripted.Parse("s.yaml", []byte("conversations:\n  trunk:\n    - say: hello\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := conformance(func() model.Provider { return scripted.New(s) }); err != nil {
			t.Error(err)
		}
	})
	t.Run("openaicompat", func(t *testing.T) {
		_, srv := newChatServer(t, func(openai.ChatCompletionRequest, int) (int, *openai.ChatCompletionMessage) { return 200, say("hello") })
		if err := conformance(func() model.Provider {
			return openaicompat.New(openaicompat.Config{APIKey: testKey, BaseURL: srv.URL + "/v1"})
		}); err != nil {
			t.Error(err)
		}
	})
}
