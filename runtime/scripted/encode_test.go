package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/inspect-dev/inspect/cache/prefix"
	openai "github.com/sashabaranov/go-openai"
)

// The incremental encoder gives the bytes json.Marshal gives, step after
// step of a conversation that grows, switches agent (a new system prompt
// and tools), has a message rewritten, carries HTML-escaped and non-ASCII
// text, tool calls and parts; and its cache key (the prompt interned a
// call at a time) is the one computed from scratch.
func TestEncoder_SameBytesAsMarshal(t *testing.T) {
	e := encoder{convs: map[string]*encoded{}}
	m := &Model{tree: prefix.NewTree(), paths: map[string]*interned{}}
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file", Description: "Read <a> & b"}}}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "You are the analyst."}}
	check := func(step string, req openai.ChatCompletionRequest) {
		t.Helper()
		enc, err := e.messages("trunk", req.Messages)
		if err != nil {
			t.Fatal(err)
		}
		got, err := body(req, enc)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(req)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: body\n%s\nwant\n%s", step, got, want)
		}
		tools := []byte("null")
		if len(req.Tools) > 0 {
			tools, _ = json.Marshal(req.Tools)
		}
		if k, want := m.tree.Key(m.prompt("trunk", tools, req.Messages, enc)), scratchKey(req); !bytes.Equal(k, want) {
			t.Fatalf("%s: cache key\n%s\nwant\n%s", step, k, want)
		}
	}
	for i := 0; i < 30; i++ {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: fmt.Sprintf("step %d: <b>é & ü</b> \u2028", i)})
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"a.md"}`}}}})
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: fmt.Sprintf("call_%d", i), Content: "revenue 4.2M"})
		req := openai.ChatCompletionRequest{Model: "m", Messages: append([]openai.ChatCompletionMessage(nil), msgs...), Tools: tools}
		switch i {
		case 10: // a hand-off: another system prompt, other tools
			req.Messages[0].Content = "You are billing."
			req.Tools = nil
		case 20: // an earlier message rewritten
			req.Messages[4].Content = "rewritten"
		case 25: // parts instead of content
			req.Messages[1] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: "part"}}}
		}
		check(fmt.Sprintf("step %d", i), req)
	}
	check("no messages", openai.ChatCompletionRequest{Model: "m"})
	check("system only", openai.ChatCompletionRequest{Model: "m", Messages: msgs[:1]})
}

// scratchKey is the prompt's key computed from scratch: the tools as the
// body holds them, the leading system message, the other messages.
func scratchKey(body openai.ChatCompletionRequest) []byte {
	var tools, system []byte
	if len(body.Tools) > 0 {
		tools, _ = json.Marshal(body.Tools)
	}
	var rest [][]byte
	for i, msg := range body.Messages {
		enc, _ := json.Marshal(msg)
		if i == 0 && msg.Role == openai.ChatMessageRoleSystem {
			system = enc
			continue
		}
		rest = append(rest, enc)
	}
	return prefix.Key(tools, system, rest)
}
