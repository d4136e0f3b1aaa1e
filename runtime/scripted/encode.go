package scripted

import (
	"bytes"
	"encoding/json"
	"fmt"

	openai "github.com/sashabaranov/go-openai"
)

// A conversation's requests repeat its earlier messages and add a few:
// encoding each request whole costs in proportion to the conversation, at
// every step. The encoder keeps each conversation's encoded messages and
// encodes only the messages it has not seen, producing exactly the bytes
// json.Marshal would (TestEncoder_SameBytesAsMarshal).

// encoder holds the encoded messages of each conversation, and the rest
// of its last request.
type encoder struct {
	convs  map[string]*encoded
	frames map[string]*framed
}

// encoded is one conversation's messages as last encoded, with the bytes
// of each. msgs is the caller's slice, kept as it is: a message once sent
// is never changed (model.Request.Body).
type encoded struct {
	msgs []openai.ChatCompletionMessage
	enc  [][]byte
	// joined is the encodings joined by commas, the message list of the
	// body; each of enc is a slice of it, and it grows by appending.
	joined []byte
}

// sameMessage reports whether a and b encode alike; messages with parts
// (MultiContent) are never taken as the same, so they are encoded again.
func sameMessage(a, b *openai.ChatCompletionMessage) bool {
	if a == b {
		return true // the same message, at the same address
	}
	if a.Role != b.Role || a.Content != b.Content || a.Refusal != b.Refusal || a.Name != b.Name ||
		a.ReasoningContent != b.ReasoningContent || a.ToolCallID != b.ToolCallID ||
		a.MultiContent != nil || b.MultiContent != nil || len(a.ToolCalls) != len(b.ToolCalls) ||
		(a.FunctionCall == nil) != (b.FunctionCall == nil) || (a.FunctionCall != nil && *a.FunctionCall != *b.FunctionCall) {
		return false
	}
	for i := range a.ToolCalls {
		x, y := &a.ToolCalls[i], &b.ToolCalls[i]
		if x.ID != y.ID || x.Type != y.Type || x.Function != y.Function || (x.Index == nil) != (y.Index == nil) || (x.Index != nil && *x.Index != *y.Index) {
			return false
		}
	}
	return true
}

// messages returns the encoding of each of msgs, and those joined by
// commas, reusing conversation conv's encodings of the messages it had
// before. A request that repeats the previous one and adds messages (the
// usual call) encodes only those and appends them after the previous
// ones: a slice once returned is never written within its length.
func (e *encoder) messages(conv string, msgs []openai.ChatCompletionMessage) (enc [][]byte, joined []byte, _ error) {
	prev := e.convs[conv]
	k := 0 // how many of prev's messages msgs repeats at its start
	if prev != nil {
		for k < len(prev.msgs) && k < len(msgs) && sameMessage(&prev.msgs[k], &msgs[k]) {
			k++
		}
	}
	var out [][]byte
	if prev != nil && k == len(prev.msgs) {
		out, joined = prev.enc[:k], prev.joined // it goes on from prev: append after it
	} else {
		out = make([][]byte, 0, len(msgs)+16)
	}
	for i := len(out); i < len(msgs); i++ {
		var b []byte
		if prev != nil && i < len(prev.msgs) && sameMessage(&prev.msgs[i], &msgs[i]) {
			b = prev.enc[i]
		} else {
			var err error
			if b, err = json.Marshal(msgs[i]); err != nil {
				return nil, nil, err
			}
		}
		if i > 0 {
			joined = append(joined, ',')
		}
		start := len(joined)
		joined = append(joined, b...)
		out = append(out, joined[start:len(joined):len(joined)])
	}
	e.convs[conv] = &encoded{msgs: msgs, enc: out, joined: joined}
	return out[:len(out):len(out)], joined[:len(joined):len(joined)], nil
}

// framed is a conversation's request as last encoded without its
// messages.
type framed struct {
	key    []byte       // json.Marshal of the request without messages and tools
	first  *openai.Tool // its tools slice: the first element, and the length
	ntools int
	rest   []byte // json.Marshal of the request without messages
	tools  []byte // json.Marshal of its tools, "null" when it has none
}

// frame returns json.Marshal of req without its messages (rest) and of its
// tools ("null" when it offers none), those of conversation conv's previous
// request when only the messages changed: the same tools slice (a tools
// array once sent is never changed, model.Request.Body) and the same other
// fields, compared by their encoding. Encoding the tools, schemas and all,
// cost more than the rest of a call.
func (e *encoder) frame(conv string, req openai.ChatCompletionRequest) (rest, tools []byte, err error) {
	bare := req
	bare.Messages, bare.Tools = nil, nil
	key, err := json.Marshal(bare)
	if err != nil {
		return nil, nil, err
	}
	var first *openai.Tool
	if len(req.Tools) > 0 {
		first = &req.Tools[0]
	}
	if f := e.frames[conv]; f != nil && f.first == first && f.ntools == len(req.Tools) && bytes.Equal(f.key, key) {
		return f.rest, f.tools, nil
	}
	f := &framed{key: key, first: first, ntools: len(req.Tools), rest: key, tools: []byte("null")}
	if len(req.Tools) > 0 {
		bare.Tools = req.Tools
		if f.rest, err = json.Marshal(bare); err != nil {
			return nil, nil, err
		}
		if f.tools, err = json.Marshal(req.Tools); err != nil {
			return nil, nil, err
		}
	}
	e.frames[conv] = f
	return f.rest, f.tools, nil
}

// body returns json.Marshal of a request with frame rest (see frame) and
// the message list joined (its encodings joined by commas; msgs: it has a
// message list, maybe empty).
func body(rest []byte, msgs bool, joined []byte) ([]byte, error) {
	b := rest
	// "messages" has no omitempty: the key is there, first of its kind (a
	// JSON string value cannot hold an unescaped quote).
	const null = `"messages":null`
	i := bytes.Index(b, []byte(null))
	if i < 0 {
		return nil, fmt.Errorf("internal error: no messages key in %s", b)
	}
	if !msgs {
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(joined)+len(`"messages":[]`)-len(null))
	out = append(out, b[:i]...)
	out = append(out, `"messages":[`...)
	out = append(out, joined...)
	out = append(out, ']')
	return append(out, b[i+len(null):]...), nil
}
