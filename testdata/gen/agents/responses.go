package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// responsesRequest is what the server reads of an OpenAI Responses request
// (Codex).
type responsesRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type      string          `json:"type"`
		Role      string          `json:"role"`
		Content   json.RawMessage `json:"content"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments string          `json:"arguments"`
		Author    string          `json:"author"`
		Recipient string          `json:"recipient"`
		Output    json.RawMessage `json:"output"`
	} `json:"input"`
}

var callStepRE = regexp.MustCompile(`^call_(.+)_(\d+)_(\d+)$`)

// items reads the request's conversation: the marker texts of its user
// messages and agent messages (a sub-agent's task comes as an
// agent_message from its parent, multi_agent_v2, its text in
// encrypted_content), each model response (the function calls of one
// response share a call id prefix, the server made them; an assistant
// message is one), and the agent messages a child sends its parent (its
// final answer, or its failure).
func (q *responsesRequest) items() []item {
	var items []item
	resp := map[string]int{}   // call id prefix -> its response's index in items
	spawns := map[string]int{} // spawn_agent call id -> its response's index
	for _, it := range q.Input {
		switch {
		case it.Type == "message" && it.Role == "user", it.Type == "agent_message":
			if it.Type == "agent_message" && strings.HasPrefix(it.Author, it.Recipient+"/") {
				items = append(items, item{Reported: true})
				continue
			}
			var blocks []struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				Encrypted string `json:"encrypted_content"`
			}
			_ = json.Unmarshal(it.Content, &blocks)
			for _, b := range blocks {
				for _, t := range []string{b.Text, b.Encrypted} {
					if startsWithMarker(t) {
						items = append(items, item{Marker: t})
					}
				}
			}
		case it.Type == "message" && it.Role == "assistant":
			items = append(items, item{Response: true})
		case it.Type == "function_call" || it.Type == "custom_tool_call":
			key := it.CallID
			if m := callStepRE.FindStringSubmatch(it.CallID); m != nil {
				key = m[1] + "/" + m[2]
			}
			i, ok := resp[key]
			if !ok {
				i = len(items)
				resp[key] = i
				items = append(items, item{Response: true, Wait: true})
			}
			if it.Name != "wait_agent" {
				items[i].Wait = false
			}
			switch it.Name {
			case "spawn_agent":
				spawns[it.CallID] = i
			case "followup_task":
				items[i].Started++
			}
		case it.Type == "function_call_output":
			// a spawn that failed (the thread limit, say) starts nothing
			if i, ok := spawns[it.CallID]; ok && strings.Contains(string(it.Output), "task_name") {
				items[i].Started++
			}
		}
	}
	return items
}

// compaction reports whether the request asks for a summary of the
// conversation (Codex compacting: its last user message is the
// compaction prompt).
func (q *responsesRequest) compaction() bool {
	for i := len(q.Input) - 1; i >= 0; i-- {
		it := q.Input[i]
		if it.Type != "message" || it.Role != "user" {
			continue
		}
		return compactionRE.Match(it.Content)
	}
	return false
}

// codexCall is c as Codex's function call: its name, namespace and
// arguments. A sub-agent of type "fork" inherits the parent's turns
// (fork_turns all, Codex's default), any other starts fresh (none); an
// unknown type is passed as agent_type, which spawn_agent does not take.
func (s *server) codexCall(c Call) (name, namespace string, args map[string]any) {
	switch c.Tool {
	case "read":
		return "exec_command", "", map[string]any{"cmd": "cat " + mustAbs(s.dir, c.Path)}
	case "bash":
		return "exec_command", "", map[string]any{"cmd": c.Command}
	case "agent":
		a := map[string]any{"task_name": c.Task, "message": agentPrompt(c.Task), "fork_turns": "none"}
		switch c.Type {
		case "":
		case "fork":
			a["fork_turns"] = "all"
		default:
			a["agent_type"] = c.Type
		}
		return "spawn_agent", "collaboration", a
	case "followup":
		return "followup_task", "collaboration", map[string]any{"target": c.Task, "message": agentPrompt(c.Next)}
	case "wait":
		return "wait_agent", "collaboration", map[string]any{"timeout_ms": 10000}
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
	v := reduce(q.items())
	conv, step := v.conv, v.responses
	var st Step
	switch {
	case conv != "" && q.compaction():
		e.Conv, e.Compact = conv, true
		st = Step{Text: summary(conv)}
	case conv == "":
		e.Side = true
		st = Step{Text: "ok"}
	default:
		e.Conv, e.Step = conv, step
		st = s.sc.answer("codex", v)
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
	if st.Huge {
		in = hugeContext
	}
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
			e.call(name, it["call_id"].(string), c)
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
