package chat

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// chatRequest reads an OpenAI Chat Completions request.
func chatRequest(o obj) (*Request, error) {
	if _, ok := o["messages"]; !ok {
		return nil, errors.New("it has no messages array")
	}
	msgs := array(o["messages"])
	if msgs == nil && string(o["messages"]) != "[]" {
		return nil, errors.New("its messages is not an array")
	}
	r := &Request{Format: OpenAIChat, Model: o.str("model"), Stream: o.boolean("stream"), ToolChoice: o.raw("tool_choice")}
	for _, t := range array(o["tools"]) {
		r.Tools = append(r.Tools, chatTool(object(t)))
	}
	for _, f := range array(o["functions"]) { // the legacy form
		fn := object(f)
		r.Tools = append(r.Tools, Tool{Name: fn.str("name"), Description: fn.str("description"), Parameters: fn.raw("parameters")})
	}
	var sys []string
	r.Messages = make([]Message, len(msgs))
	for i, raw := range msgs {
		m := chatMessage(object(raw))
		if isSystem(m.Role) {
			sys = append(sys, m.Text)
		}
		r.Messages[i] = m
	}
	r.System = joinSystem(sys)
	return r, nil
}

// chatTool reads {type: function, function: {name, description,
// parameters}}, or a custom tool {type: custom, custom: {name, description}}.
func chatTool(t obj) Tool {
	fn := object(t["function"])
	if fn == nil {
		fn = object(t["custom"])
	}
	if fn == nil {
		fn = t // a flat tool, as some servers accept
	}
	tool := Tool{Name: fn.str("name"), Description: fn.str("description"), Parameters: fn.raw("parameters")}
	if typ := t.str("type"); tool.Name == "" && typ != "function" {
		tool.Name = typ
	}
	return tool
}

// chatMessage reads one message of a request, or a response's message.
func chatMessage(o obj) Message {
	if o == nil {
		return Message{}
	}
	m := Message{Role: o.str("role"), Name: o.str("name"), CallID: o.str("tool_call_id")}
	m.Text, m.Parts = content(o["content"])
	if r := o.str("refusal"); r != "" {
		m.Parts = append(m.Parts, Part{Type: "refusal", Text: r})
	}
	for _, raw := range array(o["tool_calls"]) {
		tc := object(raw)
		fn := object(tc["function"])
		if fn == nil {
			fn = object(tc["custom"])
			if fn != nil {
				m.Calls = append(m.Calls, Call{ID: tc.str("id"), Name: fn.str("name"), Arguments: argsText(fn["input"])})
				continue
			}
		}
		m.Calls = append(m.Calls, Call{ID: tc.str("id"), Name: fn.str("name"), Arguments: argsText(fn["arguments"])})
	}
	if fc := object(o["function_call"]); fc != nil { // the legacy form
		m.Calls = append(m.Calls, Call{Name: fc.str("name"), Arguments: argsText(fc["arguments"])})
	}
	return m
}

// chatResponse reads a chat.completion object.
func chatResponse(o obj) (*Response, error) {
	choices := array(o["choices"])
	if len(choices) == 0 {
		return nil, errors.New("the response has no choices")
	}
	c := object(choices[0])
	for _, raw := range choices { // the choice with index 0, when they are out of order
		if ch := object(raw); ch != nil {
			if n, ok := ch.int("index"); ok && n == 0 {
				c = ch
				break
			}
		}
	}
	r := &Response{Format: OpenAIChat, ID: o.str("id"), Model: o.str("model"), Message: chatMessage(object(c["message"])), FinishReason: c.str("finish_reason")}
	if r.Message.Role == "" {
		r.Message.Role = "assistant"
	}
	r.Usage, r.UsageJSON = chatUsage(o.raw("usage"))
	return r, nil
}

// chatUsage reads a Chat Completions usage object: prompt_tokens (every
// input token), completion_tokens, prompt_tokens_details.cached_tokens
// (or DeepSeek's prompt_cache_hit_tokens) and
// completion_tokens_details.reasoning_tokens.
func chatUsage(raw json.RawMessage) (*record.Usage, json.RawMessage) {
	u := object(raw)
	if u == nil {
		return nil, nil
	}
	out := &record.Usage{}
	out.In, _ = u.int("prompt_tokens")
	out.Out, _ = u.int("completion_tokens")
	if d := object(u["prompt_tokens_details"]); d != nil {
		out.Cached, out.CachedReported = d.int("cached_tokens")
	}
	if !out.CachedReported {
		out.Cached, out.CachedReported = u.int("prompt_cache_hit_tokens")
	}
	if d := object(u["completion_tokens_details"]); d != nil {
		out.Reasoning, out.ReasoningReported = d.int("reasoning_tokens")
	}
	return out, raw
}

// maxEventLine bounds one line of an event stream.
const maxEventLine = 16 << 20

// ReadStream assembles a Chat Completions response from a server-sent
// event stream of chat.completion.chunk objects, calling onDelta (which
// may be nil) with each piece of text as it arrives. It stops at
// "data: [DONE]" or at the end of r. An error event gives a *StreamError;
// a stream without a chunk is an error.
func ReadStream(r io.Reader, onDelta func(string)) (*Response, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxEventLine)
	resp := &Response{Format: OpenAIChat, Message: Message{Role: "assistant"}}
	calls := map[int64]*Call{} // by the chunks' tool call index
	var txt strings.Builder
	chunks := 0
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue // event:, id:, comments and blank separators
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		chunk, err := top([]byte(data))
		if err != nil {
			return nil, fmt.Errorf("read stream chunk: %w", err)
		}
		if e := errorBody(chunk); e != nil {
			return nil, &StreamError{Message: e.Message}
		}
		chunks++
		if s := chunk.str("id"); s != "" {
			resp.ID = s
		}
		if s := chunk.str("model"); s != "" {
			resp.Model = s
		}
		if u, raw := chatUsage(chunk.raw("usage")); u != nil {
			resp.Usage, resp.UsageJSON = u, raw
		}
		for _, raw := range array(chunk["choices"]) {
			ch := object(raw)
			if n, _ := ch.int("index"); n != 0 {
				continue
			}
			delta := object(ch["delta"])
			if s := delta.str("content"); s != "" {
				txt.WriteString(s)
				if onDelta != nil {
					onDelta(s)
				}
			}
			for _, raw := range array(delta["tool_calls"]) {
				tc := object(raw)
				idx, ok := tc.int("index")
				if !ok {
					idx = int64(len(calls))
				}
				c := calls[idx]
				if c == nil {
					c = &Call{}
					calls[idx] = c
				}
				if s := tc.str("id"); s != "" {
					c.ID = s
				}
				fn := object(tc["function"])
				c.Name += fn.str("name")
				c.Arguments += fn.str("arguments")
			}
			if s := ch.str("finish_reason"); s != "" {
				resp.FinishReason = s
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	if chunks == 0 {
		return nil, errors.New("the stream held no chunks")
	}
	resp.Message.Text = txt.String()
	idx := make([]int64, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		resp.Message.Calls = append(resp.Message.Calls, *calls[i])
	}
	return resp, nil
}
