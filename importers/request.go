package importers

import (
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/record"
)

// request builds the reconstructed requests of one conversation: a Chat
// Completions body (chat's encoder, layout chat.Reconstructed) of the
// messages visible to the model so far, with the system prompt and tools
// when the source recorded them. It grows as the conversation does (each
// message is encoded once), so a conversation of N calls costs its
// messages, not N² of them; a compaction starts it again from the summary.
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
	buf   []byte // the body's start and the encoded messages so far, comma-separated
	n     int    // how many
	tools []byte // `,"tools":[…]`, or nil
	// atAssistant is len(buf) and n right after the latest assistant
	// message: what an inherit branch starts from.
	atAssistant, nAssistant int
	scratch                 []byte // one message or a body's end, encoded before it is appended
}

// bodyHead is a reconstructed body's start, up to its first message.
var bodyHead = chat.AppendRequestStart(nil, "", chat.Reconstructed)

func newRequest(system string, tools []ToolDef) *request {
	r := &request{buf: append([]byte(nil), bodyHead...)}
	if system != "" {
		r.add(chat.Message{Role: "system", Text: system})
	}
	r.setTools(tools)
	return r
}

// setTools makes tools the tool array of the requests from now on (a
// hand-off to an agent with tools of its own); none: no tools key.
func (r *request) setTools(tools []ToolDef) {
	r.tools = nil
	if len(tools) > 0 {
		ts := make([]chat.Tool, len(tools))
		for i, t := range tools {
			ts[i] = chat.Tool{Name: t.Name, Description: t.Description, Parameters: t.Parameters}
		}
		r.tools = chat.AppendTools(nil, ts)
	}
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
	r.buf, r.n, r.atAssistant, r.nAssistant = append([]byte(nil), bodyHead...), 0, 0, 0
	if system != "" {
		r.add(chat.Message{Role: "system", Text: system})
	}
	r.user(summary)
}

// add appends one message (chat.AppendMessage).
func (r *request) add(m chat.Message) {
	r.scratch = chat.AppendMessage(r.scratch[:0], m)
	r.grow(len(r.scratch) + 1)
	if r.n > 0 {
		r.buf = append(r.buf, ',')
	}
	r.buf = append(r.buf, r.scratch...)
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
	r.add(chat.Message{Role: "user", Text: text})
}

func (r *request) assistant(text string, calls []chat.Call) {
	r.add(chat.Message{Role: "assistant", Text: text, Calls: calls})
	r.atAssistant, r.nAssistant = len(r.buf), r.n
}

func (r *request) toolResult(id, text string) {
	if text == "" {
		text = "(empty)"
	}
	r.add(chat.Message{Role: "tool", CallID: id, Text: text})
}

// body is the request as the model would have received it now (with no
// messages when the source shows none before it, as a session cut short
// at its start).
//
// The body shares r's buffer: it is valid until the next message is added.
func (r *request) body(model string) []byte {
	r.scratch = chat.AppendRequestEnd(r.scratch[:0], model, r.tools, chat.Reconstructed)
	r.grow(len(r.scratch))
	end := len(r.buf)
	b := append(r.buf, r.scratch...)
	r.buf = b[:end] // keep a grown array: the next body starts with this one's bytes, at the same place
	return b
}

// response is a Chat Completions response body of one model response, in
// the request's layout: its text, its calls, its usage (prompt_tokens is
// In, cached_tokens the cache reads when reported).
func (r *request) response(model, text string, calls []chat.Call, u record.Usage) []byte {
	return chat.EncodeResponse(model, chat.Message{Text: text, Calls: calls}, "", u, chat.Reconstructed)
}
