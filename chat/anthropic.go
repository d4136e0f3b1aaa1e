package chat

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// anthropicRequest reads an Anthropic Messages request: system (a string
// or text blocks), tools, messages of content blocks.
func anthropicRequest(o obj) (*Request, error) {
	msgs, ok := o["messages"]
	if !ok || (array(msgs) == nil && strings.TrimSpace(string(msgs)) != "[]") {
		return nil, errors.New("it has no messages array")
	}
	r := &Request{Format: Anthropic, Model: o.str("model"), Stream: o.boolean("stream"), ToolChoice: o.raw("tool_choice")}
	var sys []string
	if s := o.str("system"); s != "" {
		sys = append(sys, s)
	}
	for _, b := range array(o["system"]) {
		if blk := object(b); blk.str("type") == "text" || blk.str("type") == "" {
			sys = append(sys, blk.str("text"))
		}
	}
	r.System = joinSystem(sys)
	for _, t := range array(o["tools"]) {
		tool := object(t)
		tt := Tool{Name: tool.str("name"), Description: tool.str("description"), Parameters: tool.raw("input_schema")}
		if tt.Name == "" {
			tt.Name = tool.str("type")
		}
		r.Tools = append(r.Tools, tt)
	}
	for _, raw := range array(msgs) {
		r.Messages = append(r.Messages, anthropicMessages(object(raw))...)
	}
	return r, nil
}

// anthropicMessages reads one message. A user message's tool_result
// blocks each become a tool message; the blocks between them stay user
// messages, in order. An assistant message's tool_use blocks are its calls.
func anthropicMessages(o obj) []Message {
	if o == nil {
		return []Message{{}}
	}
	role := o.str("role")
	raw := o["content"]
	if len(raw) > 0 && raw[0] == '"' {
		return []Message{{Role: role, Text: text(raw)}}
	}
	var out []Message
	cur := Message{Role: role}
	pending := false // cur holds blocks not yet added to out
	var txt strings.Builder
	flush := func() {
		if pending {
			cur.Text = txt.String()
			out = append(out, cur)
		}
		cur, pending = Message{Role: role}, false
		txt.Reset()
	}
	for _, b := range array(raw) {
		blk := object(b)
		if blk == nil {
			continue
		}
		switch typ := blk.str("type"); typ {
		case "tool_result":
			flush()
			m := Message{Role: "tool", CallID: blk.str("tool_use_id"), IsError: blk.boolean("is_error")}
			m.Text, m.Parts = content(blk["content"])
			out = append(out, m)
		case "tool_use":
			cur.Calls = append(cur.Calls, Call{ID: blk.str("id"), Name: blk.str("name"), Arguments: argsText(blk["input"])})
			pending = true
		default:
			t, ps := parts([]json.RawMessage{b})
			txt.WriteString(t)
			cur.Parts = append(cur.Parts, ps...)
			pending = true
		}
	}
	flush()
	if len(out) == 0 {
		out = append(out, Message{Role: role})
	}
	return out
}

// anthropicResponse reads a Messages response (type "message").
func anthropicResponse(o obj) (*Response, error) {
	if !o.has("content") {
		return nil, errors.New("the response has no content")
	}
	ms := anthropicMessages(obj{"role": json.RawMessage(`"assistant"`), "content": o["content"]})
	r := &Response{Format: Anthropic, ID: o.str("id"), Model: o.str("model"), Message: ms[0], FinishReason: o.str("stop_reason")}
	r.Usage, r.UsageJSON = anthropicUsage(o.raw("usage"))
	return r, nil
}

// anthropicUsage normalises Anthropic usage: input_tokens excludes the
// cache, so In = input_tokens + cache_creation_input_tokens +
// cache_read_input_tokens; Cached is the cache reads, CacheWrite the
// cache creation.
func anthropicUsage(raw json.RawMessage) (*record.Usage, json.RawMessage) {
	u := object(raw)
	if u == nil {
		return nil, nil
	}
	out := &record.Usage{}
	in, _ := u.int("input_tokens")
	out.Out, _ = u.int("output_tokens")
	out.Cached, out.CachedReported = u.int("cache_read_input_tokens")
	out.CacheWrite, out.CacheWriteReported = u.int("cache_creation_input_tokens")
	out.In = in + out.Cached + out.CacheWrite
	return out, raw
}
