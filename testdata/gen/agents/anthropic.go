package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// anthropicRequest is what the server reads of a Messages request.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System   json.RawMessage `json:"system"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

var agentIDRE = regexp.MustCompile(`agentId: ([A-Za-z0-9]+)`)

// items reads the request's conversation: user texts that start with a
// marker (top-level text blocks only: a tool result or a notification
// quoting a prompt does not rename the conversation), each assistant
// message, the agentId each Agent call's result gave its task, and the
// notifications of finished sub-agents.
func (q *anthropicRequest) items() []item {
	var items []item
	tasks := map[string]string{} // Agent tool_use id -> task
	for _, m := range q.Messages {
		var blocks []anthropicBlock
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			blocks = []anthropicBlock{{Type: "text", Text: s}}
		} else {
			_ = json.Unmarshal(m.Content, &blocks)
		}
		if m.Role == "assistant" {
			it := item{Response: true}
			for _, b := range blocks {
				if b.Type != "tool_use" || (b.Name != "Agent" && b.Name != "Task" && b.Name != "SendMessage") {
					continue
				}
				it.Started++
				var in struct {
					Prompt  string `json:"prompt"`
					Message string `json:"message"`
				}
				_ = json.Unmarshal(b.Input, &in)
				if ms := markerRE.FindStringSubmatch(in.Prompt + in.Message); ms != nil {
					tasks[b.ID] = ms[2]
				}
			}
			items = append(items, it)
			continue
		}
		if m.Role != "user" {
			continue
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				if startsWithMarker(b.Text) {
					items = append(items, item{Marker: b.Text})
				}
				if strings.Contains(b.Text, "<task-notification>") {
					items = append(items, item{Reported: true})
				}
			case "tool_result":
				if task := tasks[b.ToolUseID]; task != "" {
					if ms := agentIDRE.FindStringSubmatch(string(b.Content)); ms != nil {
						items = append(items, item{Task: task, AgentID: ms[1]})
					}
				}
			}
		}
	}
	return items
}

// compaction reports whether the request asks for a summary of the
// conversation so far (Claude Code compacting): its last user message
// asks for one.
func (q *anthropicRequest) compaction() bool {
	if len(q.Messages) == 0 {
		return false
	}
	m := q.Messages[len(q.Messages)-1]
	if m.Role != "user" {
		return false
	}
	var s string
	if json.Unmarshal(m.Content, &s) != nil {
		var blocks []anthropicBlock
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" {
				s += b.Text
			}
		}
	}
	return compactionRE.MatchString(s)
}

var compactionRE = regexp.MustCompile(`(?i)create a detailed summary of the conversation|summari[sz]e (the|this) conversation|CONTEXT CHECKPOINT COMPACTION|<state_snapshot>`)

// startsWithMarker reports whether a line of s starts with a marker (a
// fork's directive comes after boilerplate: "Your directive: [task:…]").
func startsWithMarker(s string) bool {
	return leadingMarkerRE.MatchString(s)
}

var leadingMarkerRE = regexp.MustCompile(`(?m)^\s*(Your directive: )?\[(scenario|task):`)

// claudeCall is c as Claude Code's tool call: its name and input.
func (s *server) claudeCall(c Call, v view) (string, map[string]any) {
	switch c.Tool {
	case "read":
		return "Read", map[string]any{"file_path": mustAbs(s.dir, c.Path)}
	case "bash":
		return "Bash", map[string]any{"command": c.Command, "description": "Run " + c.Command}
	case "agent":
		in := map[string]any{"description": "Part " + c.Task, "prompt": agentPrompt(c.Task)}
		t := c.Type
		if t == "" {
			t = "general-purpose"
		}
		in["subagent_type"] = t
		if c.Background != nil {
			in["run_in_background"] = *c.Background
		}
		return "Agent", in
	case "load":
		return "ToolSearch", map[string]any{"query": "select:" + c.Command, "max_results": 1}
	case "followup":
		to := v.agents[c.Task]
		if to == "" {
			to = c.Task
		}
		return "SendMessage", map[string]any{"to": to, "message": agentPrompt(c.Next), "summary": "More work for " + c.Task}
	}
	panic("unknown tool " + c.Tool)
}

func (s *server) anthropic(w http.ResponseWriter, r *http.Request, body []byte, e *Entry) {
	var q anthropicRequest
	if err := json.Unmarshal(body, &q); err != nil {
		e.Status = 400
		s.write(e)
		fail(w, 400, "not JSON: "+err.Error())
		return
	}
	e.Model, e.UserID = q.Model, q.Metadata.UserID
	v := reduce(q.items())
	var st Step
	switch {
	case v.conv != "" && q.compaction():
		e.Conv, e.Compact = v.conv, true
		st = Step{Text: "<analysis>The files were read one at a time.</analysis>\n<summary>\n" + summary(v.conv) + "\n</summary>"}
	case v.conv == "":
		// a request of the CLI's own (a title, a topic): a short text
		e.Side = true
		st = Step{Text: "ok"}
	default:
		e.Conv, e.Step = v.conv, v.responses
		st = s.sc.answer("claude", v)
		if s.sc.Interrupt == v.conv {
			s.hold(w, r, e)
			return
		}
	}
	conv, step := v.conv, v.responses
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
	u := &Usage{Input: in, CacheRead: in / 2, CacheWrite: in / 4, Output: 0}
	fresh := in - u.CacheRead - u.CacheWrite
	var blocks []map[string]any
	if len(st.Calls) > 0 {
		for i, c := range st.Calls {
			name, input := s.claudeCall(c, v)
			id := fmt.Sprintf("toolu_%s_%d_%d", safeID(conv), step, i)
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
			e.call(name, id, c)
		}
	} else {
		blocks = append(blocks, map[string]any{"type": "text", "text": st.Text})
		e.Text = st.Text
	}
	out, _ := json.Marshal(blocks)
	u.Output = tokens(out)
	e.Usage, e.Status = u, 200
	stop := "end_turn"
	if len(st.Calls) > 0 {
		stop = "tool_use"
	}
	msgID := fmt.Sprintf("msg_%s_%d_%s", safeID(conv), step, e.BodySHA256[:8])
	if e.Side || e.Compact {
		msgID = "msg_side_" + e.BodySHA256[:12]
	}
	usage := map[string]any{"input_tokens": fresh, "cache_read_input_tokens": u.CacheRead,
		"cache_creation_input_tokens": u.CacheWrite, "output_tokens": 1}
	s.write(e)
	if !q.Stream {
		w.Header().Set("Content-Type", "application/json")
		usage["output_tokens"] = u.Output
		_ = json.NewEncoder(w).Encode(map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": q.Model,
			"content": blocks, "stop_reason": stop, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sseEvent(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": q.Model, "content": []any{},
		"stop_reason": nil, "usage": usage}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			sseEvent(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			sseEvent(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			sseEvent(w, "content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			j, _ := json.Marshal(b["input"])
			sseEvent(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(j)}})
		}
		sseEvent(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	sseEvent(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop},
		"usage": map[string]any{"output_tokens": u.Output}})
	sseEvent(w, "message_stop", map[string]any{"type": "message_stop"})
}

func safeID(s string) string { return strings.NewReplacer(".", "_", "-", "_").Replace(s) }
