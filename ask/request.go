package ask

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Request is a recorded chat completions request body and the layout of
// its top level and messages array. Body is never modified.
type Request struct {
	// Body is the exact recorded JSON body.
	Body []byte

	obj      *object
	messages span   // the messages array
	msgs     []span // its elements
}

// ParseRequest reads the layout of a chat completions request body. The
// body must be a JSON object with a "messages" array.
func ParseRequest(body []byte) (*Request, error) {
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
	return &Request{Body: body, obj: o, messages: f.val, msgs: msgs}, nil
}

// PrefixLen is the length of the part of Body that Question keeps byte
// for byte: everything up to (not including) the closing ']' of the
// messages array.
func (r *Request) PrefixLen() int { return r.messages.end - 1 }

// Messages returns the number of recorded messages.
func (r *Request) Messages() int { return len(r.msgs) }

// Model returns the request's "model", or "".
func (r *Request) Model() string {
	var m string
	r.decodeField("model", &m)
	return m
}

// Stream reports whether the request asked for a streamed response.
func (r *Request) Stream() bool {
	var s bool
	r.decodeField("stream", &s)
	return s
}

// Tools returns the names of the request's function tools, in order.
func (r *Request) Tools() []string {
	var tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	r.decodeField("tools", &tools)
	var out []string
	for _, t := range tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// System returns the text of the request's system (or developer) messages,
// joined by blank lines.
func (r *Request) System() string {
	var parts []string
	for _, s := range r.msgs {
		m, err := decodeMessage(r.Body[s.start:s.end])
		if err != nil || !isSystem(m.Role) {
			continue
		}
		parts = append(parts, m.text())
	}
	return strings.Join(parts, "\n\n")
}

func (r *Request) decodeField(key string, v any) {
	if f, ok := r.obj.get(key); ok {
		_ = json.Unmarshal(r.Body[f.val.start:f.val.end], v)
	}
}

func isSystem(role string) bool { return role == "system" || role == "developer" }

// message is the part of a request message ask reads.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

func decodeMessage(b []byte) (*message, error) {
	m := new(message)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// text is the message's content: the string, or its text parts joined.
func (m *message) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

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
