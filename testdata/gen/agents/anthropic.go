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
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// userTexts returns the texts of the request's user messages that start
// with a marker (top-level text blocks only: a tool result or a
// notification quoting a prompt does not rename the conversation), with
// the number of assistant messages after each.
func (q *anthropicRequest) userTexts() (texts []string, after []int) {
	for _, m := range q.Messages {
		if m.Role == "assistant" {
			for i := range after {
				after[i]++
			}
			continue
		}
		if m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			if startsWithMarker(s) {
				texts, after = append(texts, s), append(after, 0)
			}
			continue
		}
		var blocks []anthropicBlock
		_ = json.Unmarshal(m.Content, &blocks)
		for _, b := range blocks {
			if b.Type == "text" && startsWithMarker(b.Text) {
				texts, after = append(texts, b.Text), append(after, 0)
			}
		}
	}
	return texts, after
}

// startsWithMarker reports whether a line of s starts with a marker (a
// fork's directive comes after boilerplate: "Your directive: [task:…]").
func startsWithMarker(s string) bool {
	return leadingMarkerRE.MatchString(s)
}

var leadingMarkerRE = regexp.MustCompile(`(?m)^\s*(Your directive: )?\[(scenario|task):`)

// claudeCall is c as Claude Code's tool call: its name and input.
func (s *server) claudeCall(c Call) (string, map[string]any) {
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
	e.Model = q.Model
	texts, after := q.userTexts()
	conv, step := conversation(texts, after)
	var st Step
	if conv == "" {
		// a request of the CLI's own (a title, a topic): a short text
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
	u := &Usage{Input: in, CacheRead: in / 2, CacheWrite: in / 4, Output: 0}
	fresh := in - u.CacheRead - u.CacheWrite
	var blocks []map[string]any
	if len(st.Calls) > 0 {
		for i, c := range st.Calls {
			name, input := s.claudeCall(c)
			id := fmt.Sprintf("toolu_%s_%d_%d", safeID(conv), step, i)
			blocks = append(blocks, map[string]any{"type": "tool_use", "id": id, "name": name, "input": input})
			e.Calls = append(e.Calls, name)
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
	if e.Side {
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
