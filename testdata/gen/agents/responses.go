package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
)

// responsesRequest is what the server reads of an OpenAI Responses request
// (Codex).
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		CallID  string          `json:"call_id"`
	} `json:"input"`
}

var callStepRE = regexp.MustCompile(`^call_(.+)_(\d+)_(\d+)$`)

// userTexts returns the marker texts of the request's user messages, with
// the number of model responses after each: the function calls of one
// response share a call id prefix (the server made them), and each
// assistant message ends a response.
func (q *responsesRequest) userTexts() (texts []string, after []int) {
	seen := map[string]bool{}
	bump := func() {
		for i := range after {
			after[i]++
		}
	}
	for _, it := range q.Input {
		switch {
		case it.Type == "message" && it.Role == "user", it.Type == "agent_message":
			// a sub-agent's task comes as an agent_message (multi_agent_v2),
			// its text in encrypted_content
			var blocks []struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				Encrypted string `json:"encrypted_content"`
			}
			_ = json.Unmarshal(it.Content, &blocks)
			for _, b := range blocks {
				for _, t := range []string{b.Text, b.Encrypted} {
					if startsWithMarker(t) {
						texts, after = append(texts, t), append(after, 0)
					}
				}
			}
		case it.Type == "message" && it.Role == "assistant":
			bump()
		case it.Type == "function_call" || it.Type == "custom_tool_call":
			m := callStepRE.FindStringSubmatch(it.CallID)
			key := it.CallID
			if m != nil {
				key = m[1] + "/" + m[2]
			}
			if !seen[key] {
				seen[key] = true
				bump()
			}
		}
	}
	return texts, after
}

// codexCall is c as Codex's function call: its name, namespace and
// arguments.
func (s *server) codexCall(c Call) (name, namespace string, args map[string]any) {
	switch c.Tool {
	case "read":
		return "exec_command", "", map[string]any{"cmd": "cat " + mustAbs(s.dir, c.Path)}
	case "bash":
		return "exec_command", "", map[string]any{"cmd": c.Command}
	case "agent":
		return "spawn_agent", "collaboration", map[string]any{"task_name": c.Task, "message": agentPrompt(c.Task)}
	}
	panic("unknown tool " + c.Tool)
}

func (s *server) responses(w http.ResponseWriter, r *http.Request, body []byte, e *Entry) {
	var q responsesRequest
	if err := json.Unmarshal(body, &q); err != nil {
		e.Status = 400
		s.write(e)
		fail(w, 400, "not JSON: "+err.Error())
		return
	}
	e.Model = q.Model
	texts, after := q.userTexts()
	conv, step := conversation(texts, after)
	var st Step
	if conv == "" {
		e.Side = true
		st = Step{Text: "ok"}
	} else {
		e.Conv, e.Step = conv, step
		st = s.sc.answer(conv, step)
		if s.sc.Interrupt == conv {
			s.hold(w, r, e)
			return
		}
	}
	if st.Status != 0 {
		e.Status = st.Status
		s.write(e)
		fail(w, st.Status, fmt.Sprintf("scripted failure of %s at step %d", conv, step))
		return
	}
	in := tokens(body)
	u := &Usage{Input: in, CacheRead: in / 2}
	var items []map[string]any
	if len(st.Calls) > 0 {
		for i, c := range st.Calls {
			name, ns, args := s.codexCall(c)
			a, _ := json.Marshal(args)
			it := map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d_%d", safeID(conv), step, i),
				"call_id": fmt.Sprintf("call_%s_%d_%d", safeID(conv), step, i), "name": name, "arguments": string(a), "status": "completed"}
			if ns != "" {
				it["namespace"] = ns
			}
			items = append(items, it)
			e.Calls = append(e.Calls, name)
		}
	} else {
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%s_%d", safeID(conv), step), "role": "assistant",
			"status": "completed", "content": []any{map[string]any{"type": "output_text", "text": st.Text, "annotations": []any{}}}})
		e.Text = st.Text
	}
	out, _ := json.Marshal(items)
	u.Output = tokens(out)
	e.Usage, e.Status = u, 200
	s.write(e)
	respID := "resp_" + e.BodySHA256[:16]
	usage := map[string]any{"input_tokens": u.Input, "input_tokens_details": map[string]any{"cached_tokens": u.CacheRead},
		"output_tokens": u.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": u.Input + u.Output}
	w.Header().Set("Content-Type", "text/event-stream")
	sseEvent(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID, "status": "in_progress", "model": q.Model}})
	for i, it := range items {
		sseEvent(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": it})
		if it["type"] == "message" {
			sseEvent(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": it["id"],
				"output_index": i, "content_index": 0, "delta": st.Text})
		}
		sseEvent(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	sseEvent(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": respID, "status": "completed", "model": q.Model, "output": items, "usage": usage}})
}
