package chat

import (
	"encoding/json"
	"errors"

	"github.com/inspect-dev/inspect/record"
)

// responsesRequest reads an OpenAI Responses request: instructions, input
// (a string, or a list of items), tools.
func responsesRequest(o obj) (*Request, error) {
	if !o.has("input") && !o.has("instructions") {
		return nil, errors.New("it has neither input nor instructions")
	}
	r := &Request{Format: OpenAIResponses, Model: o.str("model"), Stream: o.boolean("stream"), ToolChoice: o.raw("tool_choice")}
	var sys []string
	if s := o.str("instructions"); s != "" {
		sys = append(sys, s)
	}
	for _, t := range array(o["tools"]) {
		tool := object(t)
		tt := Tool{Name: tool.str("name"), Description: tool.str("description"), Parameters: tool.raw("parameters")}
		if tt.Name == "" {
			tt.Name = tool.str("type") // a built-in tool: web_search_preview, file_search, …
		}
		r.Tools = append(r.Tools, tt)
	}
	if s, ok := o["input"]; ok && len(s) > 0 && s[0] == '"' {
		r.Messages = []Message{{Role: "user", Text: text(s)}}
	}
	for _, raw := range array(o["input"]) {
		it := object(raw)
		if it == nil {
			if len(raw) > 0 && raw[0] == '"' {
				r.Messages = append(r.Messages, Message{Role: "user", Text: text(raw)})
			}
			continue
		}
		switch it.str("type") {
		case "message", "":
			if !it.has("role") {
				continue
			}
			m := Message{Role: it.str("role")}
			m.Text, m.Parts = content(it["content"])
			if isSystem(m.Role) {
				sys = append(sys, m.Text)
			}
			r.Messages = append(r.Messages, m)
		case "function_call", "custom_tool_call":
			c := responsesCall(it)
			if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == "assistant" {
				r.Messages[n-1].Calls = append(r.Messages[n-1].Calls, c)
			} else {
				r.Messages = append(r.Messages, Message{Role: "assistant", Calls: []Call{c}})
			}
		case "function_call_output", "custom_tool_call_output":
			m := Message{Role: "tool", CallID: it.str("call_id")}
			m.Text, m.Parts = content(it["output"])
			r.Messages = append(r.Messages, m)
		}
		// reasoning, item_reference, web_search_call and the other item
		// types carry no text a rule reads: skipped.
	}
	r.System = joinSystem(sys)
	return r, nil
}

// responsesResponse reads a Responses "response" object: its output items,
// status and usage.
func responsesResponse(o obj) (*Response, error) {
	if !o.has("output") {
		return nil, errors.New("the response has no output")
	}
	r := &Response{Format: OpenAIResponses, ID: o.str("id"), Model: o.str("model"), Message: Message{Role: "assistant"}, FinishReason: o.str("status")}
	if d := object(o["incomplete_details"]); d != nil && d.str("reason") != "" {
		r.FinishReason = d.str("reason")
	}
	for _, raw := range array(o["output"]) {
		it := object(raw)
		switch it.str("type") {
		case "message":
			t, ps := content(it["content"])
			r.Message.Text += t
			r.Message.Parts = append(r.Message.Parts, ps...)
		case "function_call", "custom_tool_call":
			r.Message.Calls = append(r.Message.Calls, responsesCall(it))
		case "reasoning":
			var summary string
			for _, s := range array(it["summary"]) {
				summary += object(s).str("text")
			}
			r.Message.Parts = append(r.Message.Parts, Part{Type: "reasoning", Text: summary})
		}
	}
	r.Usage, r.UsageJSON = responsesUsage(o.raw("usage"))
	return r, nil
}

// responsesUsage reads input_tokens (every input token),
// input_tokens_details.cached_tokens, output_tokens and
// output_tokens_details.reasoning_tokens.
func responsesUsage(raw json.RawMessage) (*record.Usage, json.RawMessage) {
	u := object(raw)
	if u == nil {
		return nil, nil
	}
	out := &record.Usage{}
	out.In, _ = u.int("input_tokens")
	out.Out, _ = u.int("output_tokens")
	if d := object(u["input_tokens_details"]); d != nil {
		out.Cached, out.CachedReported = d.int("cached_tokens")
	}
	if d := object(u["output_tokens_details"]); d != nil {
		out.Reasoning, out.ReasoningReported = d.int("reasoning_tokens")
	}
	return out, raw
}

// responsesCall reads a function_call item (arguments, a JSON string) or a
// custom_tool_call item (input, free text); its id is call_id, else id.
func responsesCall(it obj) Call {
	args := it["arguments"]
	if it.str("type") == "custom_tool_call" {
		args = it["input"]
	}
	c := Call{ID: it.str("call_id"), Name: it.str("name"), Arguments: argsText(args)}
	if c.ID == "" {
		c.ID = it.str("id")
	}
	return c
}
