package asktest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// sseWriter writes named server-sent events, flushing each.
type sseWriter struct {
	w  http.ResponseWriter
	fl http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	return &sseWriter{w: w, fl: fl}
}

func (s *sseWriter) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	if s.fl != nil {
		s.fl.Flush()
	}
}

// anthropicUsage is rep's usage as Messages reports it: input_tokens
// without the cache reads, which are cache_read_input_tokens.
func anthropicUsage(rep Reply) map[string]any {
	u := map[string]any{"input_tokens": 0, "output_tokens": 0}
	if rep.Usage != nil {
		cached := 0
		if d := rep.Usage.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		u["input_tokens"] = rep.Usage.PromptTokens - cached
		u["cache_read_input_tokens"] = cached
		u["cache_creation_input_tokens"] = 0
		u["output_tokens"] = rep.Usage.CompletionTokens
	}
	return u
}

// answerAnthropic writes rep as a Messages response: one message object,
// or the documented event stream (message_start, a content block per
// text and tool_use with its deltas, message_delta, message_stop).
func answerAnthropic(w http.ResponseWriter, rep Reply, model string, stream bool) {
	stop := "end_turn"
	if len(rep.ToolCalls) > 0 {
		stop = "tool_use"
	}
	var content []map[string]any
	if rep.Content != "" {
		content = append(content, map[string]any{"type": "text", "text": rep.Content})
	}
	for _, tc := range rep.ToolCalls {
		var in any = map[string]any{}
		_ = json.Unmarshal([]byte(tc.Function.Arguments), &in)
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": in})
	}
	usage := anthropicUsage(rep)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "msg_test", "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	s := newSSE(w)
	start := map[string]any{"input_tokens": usage["input_tokens"], "output_tokens": 1}
	for _, k := range []string{"cache_read_input_tokens", "cache_creation_input_tokens"} {
		if v, ok := usage[k]; ok {
			start[k] = v
		}
	}
	s.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_test", "type": "message",
		"role": "assistant", "model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start}})
	s.event("ping", map[string]any{"type": "ping"})
	i := 0
	if rep.Content != "" {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, piece := range splitWords(rep.Content) {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": piece}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	for _, tc := range rep.ToolCalls {
		s.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": map[string]any{}}})
		args := tc.Function.Arguments
		half := len(args) / 2
		for _, part := range []string{args[:half], args[half:]} {
			s.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
		}
		s.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
		i++
	}
	s.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": usage["output_tokens"]}})
	s.event("message_stop", map[string]any{"type": "message_stop"})
}

// answerResponses writes rep as a Responses response: one response
// object, or the documented event stream (response.created, an output
// item per message and function call with its deltas, response.completed
// with the whole response).
func answerResponses(w http.ResponseWriter, rep Reply, model string, stream bool) {
	var output []map[string]any
	if rep.Content != "" {
		output = append(output, map[string]any{"id": "msg_test", "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Content, "annotations": []any{}}}})
	}
	for i, tc := range rep.ToolCalls {
		output = append(output, map[string]any{"id": fmt.Sprintf("fc_test_%d", i), "type": "function_call", "status": "completed",
			"call_id": tc.ID, "name": tc.Function.Name, "arguments": tc.Function.Arguments})
	}
	if output == nil {
		output = []map[string]any{}
	}
	usage := map[string]any{"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
	if u := rep.Usage; u != nil {
		cached := 0
		if d := u.PromptTokensDetails; d != nil {
			cached = d.CachedTokens
		}
		usage = map[string]any{"input_tokens": u.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": cached},
			"output_tokens": u.CompletionTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": u.PromptTokens + u.CompletionTokens}
	}
	resp := map[string]any{"id": "resp_test", "object": "response", "status": "completed", "model": model, "output": output, "usage": usage}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(resp)
		return
	}
	s := newSSE(w)
	seq := 0
	ev := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		s.event(typ, fields)
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": "resp_test", "object": "response", "status": "in_progress", "model": model, "output": []any{}}})
	for i, it := range output {
		if it["type"] == "message" {
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": it["id"], "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			for _, piece := range splitWords(rep.Content) {
				ev("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": piece})
			}
		} else {
			ev("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": it["id"], "type": "function_call", "status": "in_progress", "call_id": it["call_id"], "name": it["name"], "arguments": ""}})
			ev("response.function_call_arguments.delta", map[string]any{"item_id": it["id"], "output_index": i, "delta": it["arguments"]})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": resp})
}
