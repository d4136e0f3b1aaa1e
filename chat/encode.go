package chat

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/record"
)

// Encoding. An importer whose source keeps no bytes of a model call
// rebuilds them: a Chat Completions request of the messages the model could
// see, and a response of what it answered. This is where those bodies are
// written, so that every importer writes them alike and they read back
// through ReadRequest and ReadResponse as what was put in. Strings are
// escaped as encoding/json escapes them (the bytes our runtime records),
// messages and tools have one layout; a body's frame and a response have
// one of two (Layout), each pinned byte for byte by the runs already stored.

// Layout is how a rebuilt body is framed.
type Layout int

const (
	// Reconstructed is the layout of importers.Write's rebuilt requests and
	// responses, go-openai's types as encoding/json writes them:
	// {"messages":[…],"model":…,"tools":[…]}, and a response with its
	// zero fields (id, created, content_filter_results, system_fingerprint).
	Reconstructed Layout = iota
	// Traced is the layout of requests rebuilt from a trace's recorded
	// messages (the OTLP importer): {"model":…,"messages":[…],
	// "stream":false,"tools":[…]}, and a response of the message, finish
	// reason and usage alone.
	Traced
)

// AppendString appends s as a JSON string, escaped exactly as encoding/json
// escapes it: quotes, backslashes and control characters (\b, \f, \n, \r, \t
// by name), <, > and & (as \u003c, \u003e, \u0026), U+2028 and U+2029;
// invalid UTF-8 becomes U+FFFD.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendMessage appends m as one message of a Chat Completions request:
// {"role", "content" (when m has text), "name" (a user's, when given),
// "tool_calls" (each {"id", "type": "function", "function": {"name",
// "arguments"}}), "tool_call_id" (when m answers a call)}. Parts and
// IsError are not written.
func AppendMessage(b []byte, m Message) []byte {
	return appendMessage(b, m, false)
}

// appendMessage writes m; sparse leaves out a call's empty id, name and
// arguments, as go-openai's response types do.
func appendMessage(b []byte, m Message, sparse bool) []byte {
	b = append(b, `{"role":`...)
	b = AppendString(b, m.Role)
	if m.Text != "" {
		b = append(b, `,"content":`...)
		b = AppendString(b, m.Text)
	}
	if m.Name != "" && m.Role == "user" {
		b = append(b, `,"name":`...)
		b = AppendString(b, m.Name)
	}
	if len(m.Calls) > 0 {
		b = append(b, `,"tool_calls":[`...)
		for i, c := range m.Calls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if !sparse || c.ID != "" {
				b = append(b, `"id":`...)
				b = AppendString(b, c.ID)
				b = append(b, ',')
			}
			b = append(b, `"type":"function","function":{`...)
			comma := false
			if !sparse || c.Name != "" {
				b = append(b, `"name":`...)
				b = AppendString(b, c.Name)
				comma = true
			}
			if !sparse || c.Arguments != "" {
				if comma {
					b = append(b, ',')
				}
				b = append(b, `"arguments":`...)
				b = AppendString(b, c.Arguments)
			}
			b = append(b, "}}"...)
		}
		b = append(b, ']')
	}
	if m.CallID != "" {
		b = append(b, `,"tool_call_id":`...)
		b = AppendString(b, m.CallID)
	}
	return append(b, '}')
}

// AppendTools appends the tools array of a request, `,"tools":[…]`, or
// nothing when there are none: each tool {"function": {"name",
// "description" (when given), "parameters" (its schema compacted, null when
// it has none or it is not JSON)}, "type": "function"}, as go-openai writes
// a tool.
func AppendTools(b []byte, tools []Tool) []byte {
	if len(tools) == 0 {
		return b
	}
	b = append(b, `,"tools":[`...)
	for i, t := range tools {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"function":{"name":`...)
		b = AppendString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = AppendString(b, t.Description)
		}
		b = append(b, `,"parameters":`...)
		params := []byte("null")
		if len(t.Parameters) > 0 && json.Valid(t.Parameters) {
			if p, err := json.Marshal(t.Parameters); err == nil { // compacted, escaped as the rest
				params = p
			}
		}
		b = append(b, params...)
		b = append(b, `},"type":"function"}`...)
	}
	return append(b, ']')
}

// AppendRequestStart appends a request body's start, up to its first
// message, in layout l. A body is its start, its messages separated by
// commas (AppendMessage), then its end (AppendRequestEnd): a body that
// grows with a conversation is written a message at a time.
func AppendRequestStart(b []byte, model string, l Layout) []byte {
	if l == Traced {
		b = append(b, `{"model":`...)
		b = AppendString(b, model)
		return append(b, `,"messages":[`...)
	}
	return append(b, `{"messages":[`...)
}

// AppendRequestEnd appends what follows a request body's messages in
// layout l: the model (Reconstructed), then tools, the `,"tools":[…]` of
// AppendTools (or nil).
func AppendRequestEnd(b []byte, model string, tools []byte, l Layout) []byte {
	if l == Traced {
		b = append(b, `],"stream":false`...)
	} else {
		b = append(b, `],"model":`...)
		b = AppendString(b, model)
	}
	b = append(b, tools...)
	return append(b, '}')
}

// EncodeRequest is the request body of model, messages and tools in layout
// l.
func EncodeRequest(model string, messages []Message, tools []Tool, l Layout) []byte {
	b := AppendRequestStart(make([]byte, 0, 256), model, l)
	for i, m := range messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendMessage(b, m)
	}
	return AppendRequestEnd(b, model, AppendTools(nil, tools), l)
}

// EncodeRawRequest is a request body of messages as a trace recorded them
// (a JSON array, compacted) and model: {"messages":[…],"model":…}, the
// model left out when "".
func EncodeRawRequest(model string, messages json.RawMessage) ([]byte, error) {
	m, err := json.Marshal(messages) // compacted, escaped as the rest
	if err != nil {
		return nil, err
	}
	b := append([]byte(`{"messages":`), m...)
	if model != "" {
		b = append(b, `,"model":`...)
		b = AppendString(b, model)
	}
	return append(b, '}'), nil
}

// EncodeResponse is the Chat Completions response body of one model
// response in layout l: its assistant message m (role forced), its finish
// reason (stop, or tool_calls when m calls, when finish is ""), and its
// usage: prompt_tokens is u.In, cached_tokens and reasoning_tokens are
// written when reported.
func EncodeResponse(model string, m Message, finish string, u record.Usage, l Layout) []byte {
	m.Role = "assistant"
	if finish == "" {
		finish = "stop"
		if len(m.Calls) > 0 {
			finish = "tool_calls"
		}
	}
	b := make([]byte, 0, 512)
	if l == Traced {
		b = append(b, `{"object":"chat.completion","model":`...)
	} else {
		b = append(b, `{"id":"","object":"chat.completion","created":0,"model":`...)
	}
	b = AppendString(b, model)
	b = append(b, `,"choices":[{"index":0,"message":`...)
	b = appendMessage(b, m, l == Reconstructed)
	b = append(b, `,"finish_reason":`...)
	b = AppendString(b, finish)
	if l == Reconstructed {
		b = append(b, `,"content_filter_results":{"hate":{"filtered":false},"self_harm":{"filtered":false},"sexual":{"filtered":false},"violence":{"filtered":false},"jailbreak":{"filtered":false,"detected":false},"profanity":{"filtered":false,"detected":false}}`...)
	}
	b = append(b, `}],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, u.In, 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, u.Out, 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, u.In+u.Out, 10)
	switch {
	case u.CachedReported && l == Reconstructed:
		b = append(b, `,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":`...)
		b = strconv.AppendInt(b, u.Cached, 10)
		b = append(b, '}')
	case u.CachedReported:
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, u.Cached, 10)
		b = append(b, '}')
	case l == Reconstructed:
		b = append(b, `,"prompt_tokens_details":null`...)
	}
	switch {
	case u.ReasoningReported && l == Reconstructed:
		b = append(b, `,"completion_tokens_details":{"audio_tokens":0,"reasoning_tokens":`...)
		b = strconv.AppendInt(b, u.Reasoning, 10)
		b = append(b, `,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}`...)
	case u.ReasoningReported:
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = strconv.AppendInt(b, u.Reasoning, 10)
		b = append(b, '}')
	case l == Reconstructed:
		b = append(b, `,"completion_tokens_details":null`...)
	}
	if l == Reconstructed {
		return append(b, `},"system_fingerprint":""}`...)
	}
	return append(b, "}}"...)
}
