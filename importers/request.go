package importers

import (
	"encoding/json"

	openai "github.com/sashabaranov/go-openai"

	"github.com/inspect-dev/inspect/record"
)

// request builds the reconstructed requests of one conversation: a Chat
// Completions body of the messages visible to the model so far, with the
// system prompt and tools when the source recorded them. It grows as the
// conversation does (each message is encoded once), so a conversation of N
// calls costs its messages, not N² of them; a compaction starts it again
// from the summary.
//
// The body handed to the store is the conversation's own buffer, not a copy:
// buf is `{"messages":[` then the messages, and body appends the tail to it
// for one call. The store remembers the last body of each conversation and
// checks that the next one starts with it; since buf is only ever appended
// to (a reset or an inherit starts a new buffer), that check finds the same
// bytes at the same address and costs nothing, and no call copies the
// history. The store keeps no byte of it beyond the call once a longer body
// replaces it.
type request struct {
	buf   []byte // `{"messages":[` and the encoded messages so far, comma-separated
	n     int    // how many
	tools []byte // `,"tools":[…]`, or nil
	// atAssistant is len(buf) and n right after the latest assistant
	// message: what an inherit branch starts from.
	atAssistant, nAssistant int
}

const bodyHead = `{"messages":[`

func newRequest(system string, tools []ToolDef) *request {
	r := &request{buf: []byte(bodyHead)}
	if system != "" {
		r.add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	}
	if len(tools) > 0 {
		ts := make([]openai.Tool, len(tools))
		for i, t := range tools {
			var params any
			if len(t.Parameters) > 0 && json.Valid(t.Parameters) {
				params = t.Parameters
			}
			ts[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}}
		}
		if b, err := json.Marshal(ts); err == nil {
			r.tools = append([]byte(`,"tools":`), b...)
		}
	}
	return r
}

// inherit is a copy of r up to and including its latest assistant message:
// what a branch seeded with the parent's turns starts from.
func (r *request) inherit() *request {
	at := r.atAssistant
	if at == 0 {
		at = len(bodyHead)
	}
	return &request{buf: append([]byte(nil), r.buf[:at]...), n: r.nAssistant, tools: r.tools,
		atAssistant: r.atAssistant, nAssistant: r.nAssistant}
}

// reset starts the visible history again (a compaction), keeping the system
// prompt when the conversation had one.
func (r *request) reset(system, summary string) {
	// a new buffer: the store may still hold the old one's bytes
	r.buf, r.n, r.atAssistant, r.nAssistant = []byte(bodyHead), 0, 0, 0
	if system != "" {
		r.add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: system})
	}
	r.user(summary)
}

// message is one Chat Completions message as go-openai encodes it (the
// same keys and order), marshalled in one pass.
type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (r *request) add(m openai.ChatCompletionMessage) {
	mm := message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		tc := toolCall{ID: c.ID, Type: string(c.Type)}
		tc.Function.Name, tc.Function.Arguments = c.Function.Name, c.Function.Arguments
		mm.ToolCalls = append(mm.ToolCalls, tc)
	}
	b, err := json.Marshal(mm)
	if err != nil { // a message of plain strings always encodes
		return
	}
	r.grow(len(b) + 1)
	if r.n > 0 {
		r.buf = append(r.buf, ',')
	}
	r.buf = append(r.buf, b...)
	r.n++
}

// grow makes room for n more bytes, doubling: append grows a large slice
// by a quarter, which copies a long conversation's history (and makes the
// store compare it again) every few messages.
func (r *request) grow(n int) {
	if len(r.buf)+n <= cap(r.buf) {
		return
	}
	b := make([]byte, len(r.buf), 2*(len(r.buf)+n))
	copy(b, r.buf)
	r.buf = b
}

func (r *request) user(text string) {
	r.add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: text})
}

// call is one tool call of an assistant message.
type call struct{ id, name, args string }

func (r *request) assistant(text string, calls []call) {
	m := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: text}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, openai.ToolCall{ID: c.id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.name, Arguments: c.args}})
	}
	r.add(m)
	r.atAssistant, r.nAssistant = len(r.buf), r.n
}

func (r *request) toolResult(id, text string) {
	if text == "" {
		text = "(empty)"
	}
	r.add(openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: text})
}

// body is the request as the model would have received it now (with no
// messages when the source shows none before it, as a session cut short
// at its start).
//
// The body shares r's buffer: it is valid until the next message is added.
func (r *request) body(model string) []byte {
	m, _ := json.Marshal(model)
	r.grow(len(`],"model":`) + len(m) + len(r.tools) + 1)
	end := len(r.buf)
	b := append(r.buf, `],"model":`...)
	b = append(b, m...)
	b = append(b, r.tools...)
	b = append(b, '}')
	r.buf = b[:end] // keep a grown array: the next body starts with this one's bytes, at the same place
	return b
}

// response is a Chat Completions response body of one model response, in
// the request's format: its text, its calls, its usage (prompt_tokens is
// In, cached_tokens the cache reads when reported).
func (r *request) response(model, text string, calls []call, u record.Usage) []byte {
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: text}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{ID: c.id, Type: openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.name, Arguments: c.args}})
	}
	finish := openai.FinishReasonStop
	if len(calls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	usage := openai.Usage{PromptTokens: int(u.In), CompletionTokens: int(u.Out), TotalTokens: int(u.In + u.Out)}
	if u.CachedReported {
		usage.PromptTokensDetails = &openai.PromptTokensDetails{CachedTokens: int(u.Cached)}
	}
	if u.ReasoningReported {
		usage.CompletionTokensDetails = &openai.CompletionTokensDetails{ReasoningTokens: int(u.Reasoning)}
	}
	b, err := json.Marshal(openai.ChatCompletionResponse{Object: "chat.completion", Model: model,
		Choices: []openai.ChatCompletionChoice{{Message: msg, FinishReason: finish}}, Usage: usage})
	if err != nil {
		return nil
	}
	return b
}
