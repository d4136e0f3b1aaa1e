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
	e := encoder{convs: map[string]*encoded{}, frames: map[string]*framed{}}
	m := &Model{tree: prefix.NewTree(), paths: map[string]*interned{}}
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file", Description: "Read <a> & b"}}}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleSystem, Content: "You are the analyst."}}
	check := func(step string, req openai.ChatCompletionRequest) {
		t.Helper()
		encodeAndCheck(t, &e, m, step, req)
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

// encodeAndCheck encodes req as the scripted model does, as a request of
// conversation "trunk", and fails unless the body is json.Marshal's, the
// tools' JSON json.Marshal's ("null" when none) and the interned prompt's
// key the one computed from scratch.
func encodeAndCheck(t *testing.T, e *encoder, m *Model, step string, req openai.ChatCompletionRequest) (enc [][]byte, joined []byte) {
	t.Helper()
	enc, joined, err := e.messages("trunk", req.Messages)
	if err != nil {
		t.Fatal(err)
	}
	rest, tools, err := e.frame("trunk", req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := body(rest, req.Messages != nil, joined)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(req.Tools); len(req.Tools) > 0 && !bytes.Equal(tools, want) || len(req.Tools) == 0 && string(tools) != "null" {
		t.Fatalf("%s: tools %s, want %s", step, tools, want)
	}
	if want, _ := json.Marshal(req); !bytes.Equal(got, want) {
		t.Fatalf("%s: body\n%s\nwant\n%s", step, got, want)
	}
	if k, want := m.tree.Key(m.prompt("trunk", tools, req.Messages, enc)), scratchKey(req); !bytes.Equal(k, want) {
		t.Fatalf("%s: cache key\n%s\nwant\n%s", step, k, want)
	}
	return enc, joined
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

// The runtime sends a conversation's messages as one slice that grows in
// place (and is copied when it outgrows its array, or starts again after a
// hand-off) and its tools array as the same slice: the encoder reuses what
// it encoded, by address, and still gives json.Marshal's bytes, the tools'
// JSON and the from-scratch cache key at every step, also when the model,
// the tools or their absence change; what it returned for an earlier call
// never changes.
func TestEncoder_GrowingSlice(t *testing.T) {
	e := encoder{convs: map[string]*encoded{}, frames: map[string]*framed{}}
	m := &Model{tree: prefix.NewTree(), paths: map[string]*interned{}}
	offered := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file", Description: "Read <a> & b"}}}
	wire := make([]openai.ChatCompletionMessage, 1, 4)
	wire[0] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: "You are the analyst."}
	type returned struct {
		enc                [][]byte
		want               [][]byte
		joined, wantJoined []byte
	}
	var kept []returned
	for i := 0; i < 40; i++ {
		if i == 25 { // a hand-off: a new slice with another system prompt
			next := make([]openai.ChatCompletionMessage, len(wire), len(wire)+8)
			copy(next, wire)
			next[0] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: "You are billing."}
			wire = next
		}
		wire = append(wire,
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: fmt.Sprintf("call_%d", i), Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "read_file", Arguments: `{"path":"a.md"}`}}}},
			openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: fmt.Sprintf("call_%d", i), Content: fmt.Sprintf("revenue %d <b>", i)})
		req := openai.ChatCompletionRequest{Model: "m", Messages: wire[:len(wire):len(wire)], Tools: offered}
		switch {
		case i >= 15 && i < 20: // another model: the frame is encoded again
			req.Model = "m2"
		case i == 30: // other tools (a new slice)
			offered = []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "write_file"}}}
			req.Tools = offered
		case i > 34:
			req.Tools = nil
		}
		enc, joined := encodeAndCheck(t, &e, m, fmt.Sprintf("step %d", i), req)
		var want [][]byte
		for _, b := range enc {
			want = append(want, bytes.Clone(b))
		}
		kept = append(kept, returned{enc, want, joined, bytes.Clone(joined)})
	}
	for i, r := range kept {
		if !bytes.Equal(r.joined, r.wantJoined) {
			t.Fatalf("the message list returned at step %d changed later: %s, was %s", i, r.joined, r.wantJoined)
		}
		for j := range r.want {
			if !bytes.Equal(r.enc[j], r.want[j]) {
				t.Fatalf("the encodings returned at step %d changed later: message %d is %s, was %s", i, j, r.enc[j], r.want[j])
			}
		}
	}
}
