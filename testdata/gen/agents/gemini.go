package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// geminiRequest is what the server reads of a Gemini generateContent or
// streamGenerateContent request (Gemini CLI).
type geminiRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text         string `json:"text"`
			FunctionCall *struct {
				Name string          `json:"name"`
				Args json.RawMessage `json:"args"`
			} `json:"functionCall"`
		} `json:"parts"`
	} `json:"contents"`
	SystemInstruction *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"systemInstruction"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

// items reads the request's conversation: the marker texts of its user
// parts and each model turn (invoke_agent blocks until the sub-agent ends,
// so nothing is pending across turns).
func (q *geminiRequest) items() []item {
	var items []item
	for _, c := range q.Contents {
		if c.Role == "model" {
			items = append(items, item{Response: true})
			continue
		}
		for _, p := range c.Parts {
			if startsWithMarker(p.Text) {
				items = append(items, item{Marker: p.Text})
			}
		}
	}
	return items
}

// offers reports whether the request offers the model tool name.
func (q *geminiRequest) offers(name string) bool {
	for _, t := range q.Tools {
		for _, f := range t.FunctionDeclarations {
			if f.Name == name {
				return true
			}
		}
	}
	return false
}

// compaction reports whether the request asks for a summary of the
// conversation (Gemini CLI compressing its chat: a <state_snapshot>, and
// then a check of it).
func (q *geminiRequest) compaction() bool {
	if n := len(q.Contents); n > 0 && q.Contents[n-1].Role == "user" {
		for _, p := range q.Contents[n-1].Parts {
			if compactionRE.MatchString(p.Text) {
				return true
			}
		}
	}
	return false
}

// geminiCall is c as Gemini CLI's function call.
func (s *server) geminiCall(c Call) (string, map[string]any) {
	switch c.Tool {
	case "read":
		return "read_file", map[string]any{"file_path": mustAbs(s.dir, c.Path)}
	case "bash":
		return "run_shell_command", map[string]any{"command": c.Command}
	case "agent":
		t := c.Type
		if t == "" {
			t = "generalist"
		}
		return "invoke_agent", map[string]any{"agent_name": t, "prompt": agentPrompt(c.Task)}
	case "complete":
		return "complete_task", map[string]any{"result": map[string]any{"response": c.Command}}
	}
	panic("unknown tool " + c.Tool)
}

// gemini answers /v1beta/models/<model>:generateContent and
// :streamGenerateContent. Gemini CLI first asks a small model, without
// streaming, to rate the prompt's complexity (to pick a model): that is a
// side request, answered with a low score.
func (s *server) gemini(w http.ResponseWriter, r *http.Request, body []byte, e *Entry) {
	var q geminiRequest
	if err := json.Unmarshal(body, &q); err != nil {
		e.Status = 400
		s.write(e)
		fail(w, 400, "not JSON: "+err.Error())
		return
	}
	model, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/v1beta/models/"), ":")
	e.Model = model
	stream := method == "streamGenerateContent"
	v := reduce(q.items())
	conv, step := v.conv, v.responses
	var st Step
	switch {
	case conv != "" && q.compaction():
		e.Conv, e.Compact = conv, true
		st = Step{Text: "<state_snapshot>\n" + summary(conv) + "\n</state_snapshot>"}
	case conv == "" || !stream:
		e.Side = true
		st = Step{Text: `{"complexity_reasoning":"a scripted task","complexity_score":10}`}
	default:
		e.Conv, e.Step = conv, step
		st = s.sc.answer("gemini", v)
		if s.sc.Interrupt == conv {
			s.hold(w, r, e)
			return
		}
		// a sub-agent ends by calling complete_task with its answer
		if len(st.Calls) == 0 && st.Status == 0 && q.offers("complete_task") {
			st = Step{Calls: []Call{{Tool: "complete", Command: st.Text}}, Huge: st.Huge}
		}
	}
	if st.Status != 0 {
		e.Status = st.Status
		s.write(e)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st.Status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": st.Status,
			"message": fmt.Sprintf("scripted failure of %s at step %d", conv, step), "status": "INVALID_ARGUMENT"}})
		return
	}
	var parts []map[string]any
	if len(st.Calls) > 0 {
		for _, c := range st.Calls {
			name, args := s.geminiCall(c)
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
			e.call(name, "", c)
			if c.Tool == "complete" {
				e.Text = c.Command
			}
		}
	} else {
		parts = append(parts, map[string]any{"text": st.Text})
		e.Text = st.Text
	}
	out, _ := json.Marshal(parts)
	in := tokens(body)
	if st.Huge {
		in = hugeContext
	}
	u := &Usage{Input: in, CacheRead: in / 2, Output: tokens(out)}
	e.Usage, e.Status = u, 200
	s.write(e)
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": u.Input, "cachedContentTokenCount": u.CacheRead,
			"candidatesTokenCount": u.Output, "totalTokenCount": u.Input + u.Output},
		"modelVersion": model,
		"responseId":   "resp_" + e.BodySHA256[:16],
	}
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sseEvent(w, "", resp)
}
