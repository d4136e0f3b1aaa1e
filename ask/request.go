package ask

import (
	"encoding/json"
	"fmt"

	"github.com/inspect-dev/inspect/chat"
)

// Request is a recorded chat completions request body, read through chat,
// and the layout of its top level and messages array (for splicing).
// Body is never modified.
type Request struct {
	// Body is the exact recorded JSON body.
	Body []byte
	// Read is the body as chat reads it; Read.Messages[i] is the message
	// whose bytes are the i-th element of the messages array.
	Read *chat.Request

	obj      *object
	messages span   // the messages array
	msgs     []span // its elements
}

// ParseRequest reads a chat completions request body: its content through
// chat, the byte spans of its fields and messages for splicing. The body
// must be a JSON object with a "messages" array.
func ParseRequest(body []byte) (*Request, error) {
	read, err := chat.ReadRequest(body, chat.OpenAIChat)
	if err != nil {
		return nil, fmt.Errorf("recorded request: %w", err)
	}
	o, err := parseObject(body)
	if err != nil {
		return nil, fmt.Errorf("recorded request: %w", err)
	}
	f, ok := o.get("messages")
	if !ok {
		return nil, fmt.Errorf("recorded request has no messages array")
	}
	msgs, err := parseArray(body, f.val)
	if err != nil {
		return nil, fmt.Errorf("recorded request: messages: %w", err)
	}
	if len(msgs) != len(read.Messages) {
		// Only a body with a key repeated could get here.
		return nil, fmt.Errorf("recorded request: its messages array is ambiguous (%d elements, %d read)", len(msgs), len(read.Messages))
	}
	return &Request{Body: body, Read: read, obj: o, messages: f.val, msgs: msgs}, nil
}

// PrefixLen is the length of the part of Body that Question keeps byte
// for byte: everything up to (not including) the closing ']' of the
// messages array.
func (r *Request) PrefixLen() int { return r.messages.end - 1 }

// Messages returns the number of recorded messages.
func (r *Request) Messages() int { return len(r.msgs) }

// Model returns the request's "model", or "".
func (r *Request) Model() string { return r.Read.Model }

// Tools returns the names of the request's tools, in order.
func (r *Request) Tools() []string { return r.Read.ToolNames() }

// System returns the request's system text (see package chat).
func (r *Request) System() string { return r.Read.System }

func isSystem(role string) bool { return role == "system" || role == "developer" }

// SetModel returns body with its "model" replaced by model; every other
// byte is kept.
func SetModel(body []byte, model string) ([]byte, error) {
	v, err := json.Marshal(model)
	if err != nil {
		return nil, err
	}
	out, err := setField(body, "model", v)
	if err != nil {
		return nil, fmt.Errorf("set model: %w", err)
	}
	return out, nil
}
