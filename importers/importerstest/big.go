package importerstest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Big sessions for the import benchmarks (issue 15, DESIGN §13: memory
// stays bounded on a file of any size). Each generator writes a session of
// at least size bytes (sub-agent files counted) in the shape of the real
// samples in shared/transcripts, under dir, and returns the path to give
// `inspect import`. They write line by line, so a 1 GB session costs its
// disk, not its memory. Callers write into os.TempDir() and delete the
// folder after.

// bigText is the body of a file the generated agents read: 8 KiB of prose.
var bigText = strings.Repeat("lorem ipsum dolor sit amet, consectetur adipiscing elit\n", 8<<10/56)

// sizedWriter counts the bytes written through it.
type sizedWriter struct {
	w   *bufio.Writer
	f   *os.File
	n   *int64
	err error
}

func create(path string, total *int64) (*sizedWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &sizedWriter{w: bufio.NewWriterSize(f, 256<<10), f: f, n: total}, nil
}

// line writes v as one JSON line.
func (s *sizedWriter) line(v any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		s.err = err
		return
	}
	*s.n += int64(len(b)) + 1
	s.w.Write(b)
	s.err = s.w.WriteByte('\n')
}

// raw writes one line as it is.
func (s *sizedWriter) raw(l string) {
	if s.err != nil {
		return
	}
	*s.n += int64(len(l)) + 1
	s.w.WriteString(l)
	s.err = s.w.WriteByte('\n')
}

func (s *sizedWriter) close() error {
	if err := s.w.Flush(); s.err == nil {
		s.err = err
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	return s.err
}

// claudeLines writes Claude Code 2.1.x records (one object a line, ISO
// times, a uuid each) of one conversation: the session, or one sub-agent.
type claudeLines struct {
	*sizedWriter
	session, agent string
	n              int
}

var bigStart = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func (l *claudeLines) env(typ string, sec float64) map[string]any {
	l.n++
	m := map[string]any{"type": typ, "uuid": fmt.Sprintf("%s-%s-%d", l.session, l.agent, l.n), "sessionId": l.session,
		"timestamp": bigStart.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000Z"),
		"cwd":       "/nonexistent/app", "version": "2.1.40", "isSidechain": l.agent != "", "userType": "external"}
	if l.agent != "" {
		m["agentId"] = l.agent
	}
	return m
}

func (l *claudeLines) user(sec float64, text string) {
	m := l.env("user", sec)
	m["message"] = map[string]any{"role": "user", "content": text}
	l.line(m)
}

// asst writes one response, one line per block, each repeating the usage
// (a streaming snapshot of 1 output token until the last line), as the CLI
// writes them.
func (l *claudeLines) asst(sec float64, id string, in, read, write, out int64, blocks ...map[string]any) {
	for i, b := range blocks {
		m := l.env("assistant", sec+float64(i)*0.1)
		o := int64(1)
		if i == len(blocks)-1 {
			o = out
		}
		m["requestId"] = "req_" + id
		m["message"] = map[string]any{"id": id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": []any{b},
			"stop_reason": nil, "usage": map[string]any{"input_tokens": in, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": o}}
		l.line(m)
	}
}

func (l *claudeLines) result(sec float64, toolID, content string, tur map[string]any) {
	m := l.env("user", sec)
	m["message"] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": content, "is_error": false}}}
	if tur != nil {
		m["toolUseResult"] = tur
	}
	l.line(m)
}

func claudeText(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func claudeUse(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// BigClaudeCode writes a Claude Code session of at least size bytes under
// dir (projects/-big/big.jsonl with big/subagents/) and returns the session
// file's path. Each turn: a prompt, a response reading six files in
// parallel (8 KiB results, with the toolUseResult copies the CLI writes), a
// hook progress line per result, a Task whose sub-agent has its own file
// (a Grep and an answer), and a final answer; a compaction every 40 turns
// (the CLI compacts as the context fills, so what the model sees stays
// bounded).
func BigClaudeCode(dir string, size int64) (string, error) {
	return BigClaudeCodeText(dir, size, bigText)
}

// BigClaudeCodeText is BigClaudeCode with text (at least 2,000 bytes) as
// the body of every file read, in place of its prose: source code, say,
// whose names and assignments give the secret rules' keywords work.
func BigClaudeCodeText(dir string, size int64, text string) (string, error) {
	if len(text) < 2000 {
		return "", fmt.Errorf("a file body of %d bytes, want at least 2000", len(text))
	}
	root := filepath.Join(dir, "projects", "-big")
	var total int64
	w, err := create(filepath.Join(root, "big.jsonl"), &total)
	if err != nil {
		return "", err
	}
	m := &claudeLines{sizedWriter: w, session: "big"}
	sec := 0.0
	for turn := 0; total < size && m.err == nil; turn++ {
		sec += 10
		m.user(sec, fmt.Sprintf("turn %d: read the six files and check the notes", turn))
		var blocks []map[string]any
		for i := 0; i < 6; i++ {
			blocks = append(blocks, claudeUse(fmt.Sprintf("r%d-%d", turn, i), "Read", map[string]any{"file_path": fmt.Sprintf("/repo/f%d-%d.go", turn, i)}))
		}
		m.asst(sec+1, fmt.Sprintf("m%d-a", turn), 3, 20000, 500, 200, blocks...)
		for i := 0; i < 6; i++ {
			m.result(sec+2, fmt.Sprintf("r%d-%d", turn, i), text, map[string]any{"type": "text", "file": map[string]any{"filePath": fmt.Sprintf("/repo/f%d-%d.go", turn, i), "content": text}})
			p := m.env("progress", sec+2)
			p["data"] = map[string]any{"type": "hook_progress", "hookEvent": "PostToolUse", "hookName": "PostToolUse:Read"}
			m.line(p)
		}
		agent := fmt.Sprintf("a%07x", turn)
		m.asst(sec+3, fmt.Sprintf("m%d-b", turn), 3, 24000, 500, 100,
			claudeUse("t"+agent, "Task", map[string]any{"description": "notes", "prompt": fmt.Sprintf("find the notes of turn %d", turn), "subagent_type": "Explore"}))
		sw, err := create(filepath.Join(root, "big", "subagents", "agent-"+agent+".jsonl"), &total)
		if err != nil {
			return "", err
		}
		sub := &claudeLines{sizedWriter: sw, session: "big", agent: agent}
		sub.user(sec+3.1, fmt.Sprintf("find the notes of turn %d", turn))
		sub.asst(sec+4, "s"+agent, 3, 0, 3000, 50, claudeUse("g"+agent, "Grep", map[string]any{"pattern": "notes"}))
		sub.result(sec+5, "g"+agent, text[:2000], nil)
		sub.asst(sec+6, "s2"+agent, 3, 3000, 100, 80, claudeText("the notes say nothing new"))
		if err := sw.close(); err != nil {
			return "", err
		}
		m.result(sec+7, "t"+agent, "the notes say nothing new", map[string]any{"status": "completed", "agentId": agent, "totalDurationMs": 3900})
		m.asst(sec+8, fmt.Sprintf("m%d-c", turn), 3, 25000, 200, 150, claudeText(fmt.Sprintf("done with turn %d", turn)))
		d := m.env("system", sec+8.5)
		d["subtype"], d["durationMs"] = "turn_duration", 8500
		m.line(d)
		if turn%40 == 39 {
			cb := m.env("system", sec+9)
			cb["subtype"] = "compact_boundary"
			m.line(cb)
			s := m.env("user", sec+9.5)
			s["isCompactSummary"] = true
			s["message"] = map[string]any{"role": "user", "content": "summary of the turns so far"}
			m.line(s)
		}
	}
	if err := w.close(); err != nil {
		return "", err
	}
	return filepath.Join(root, "big.jsonl"), nil
}

// kimiJournal writes wire.jsonl records of the Python Kimi CLI (protocol
// 1.8: {"timestamp": seconds, "message": {"type", "payload"}}).
type kimiJournal struct{ *sizedWriter }

const kimiStart = 1774000000.0

func (j *kimiJournal) ev(at float64, typ string, payload any) {
	j.line(map[string]any{"timestamp": kimiStart + at, "message": map[string]any{"type": typ, "payload": payload}})
}

func kimiUsage(other, out, read, creation int64, id string) map[string]any {
	return map[string]any{"context_usage": 0.2, "context_tokens": other + read + creation, "max_context_tokens": 262144,
		"token_usage": map[string]any{"input_other": other, "output": out, "input_cache_read": read, "input_cache_creation": creation},
		"message_id":  id, "plan_mode": false, "mcp_status": nil}
}

func kimiCall(id, name, args string) map[string]any {
	return map[string]any{"type": "function", "id": id, "function": map[string]any{"name": name, "arguments": args}, "extras": nil}
}

func kimiResult(id, output string) map[string]any {
	return map[string]any{"tool_call_id": id, "return_value": map[string]any{"is_error": false, "output": output, "message": "",
		"display": []any{map[string]any{"type": "brief", "text": "done"}}, "extras": nil}}
}

// BigKimiCLI writes a Kimi CLI session folder of at least size bytes under
// dir (sessions/<bucket>/big/ with wire.jsonl, context.jsonl, state.json
// and subagents/<id>/) and returns the folder's path. Each turn: a step
// that thinks, says a line and reads three files (arguments streamed in
// parts, 8 KiB results), a step with a shell call, and a closing step; every
// fifth turn an Agent call whose sub-agent has its own journal (its events
// also forwarded into the session's, as Kimi CLI writes them); a compaction
// every 40 turns.
func BigKimiCLI(dir string, size int64) (string, error) {
	sess := filepath.Join(dir, "sessions", "0123456789abcdef0123456789abcdef", "big")
	var total int64
	for name, content := range map[string]string{
		"context.jsonl": `{"role":"_system_prompt","content":"You are Kimi, a coding agent. Work in the user's repository."}` + "\n",
		"state.json":    `{"version": 1, "custom_title": "a long generated session", "title_generated": false}` + "\n",
	} {
		if err := os.MkdirAll(sess, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(sess, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	w, err := create(filepath.Join(sess, "wire.jsonl"), &total)
	if err != nil {
		return "", err
	}
	j := &kimiJournal{w}
	j.raw(`{"type": "metadata", "protocol_version": "1.8"}`)
	at := 0.0
	for turn := 0; total < size && j.err == nil; turn++ {
		at += 20
		t := at
		j.ev(t, "TurnBegin", map[string]any{"user_input": []any{map[string]any{"type": "text", "text": fmt.Sprintf("turn %d: look at the three files and fix the bug", turn)}}})
		j.ev(t+0.01, "StepBegin", map[string]any{"n": 1})
		j.ev(t+1, "ContentPart", map[string]any{"type": "think", "think": "I should read the files first, then decide what to change."})
		j.ev(t+1.5, "ContentPart", map[string]any{"type": "text", "text": "Reading the three files."})
		for i := 0; i < 3; i++ {
			id := fmt.Sprintf("tool_r%d_%d", turn, i)
			j.ev(t+2+float64(i)*0.1, "ToolCall", kimiCall(id, "ReadFile", `{"path": "`))
			j.ev(t+2.05+float64(i)*0.1, "ToolCallPart", map[string]any{"arguments_part": fmt.Sprintf(`src/f%d_%d.py"}`, turn, i)})
		}
		j.ev(t+2.5, "StatusUpdate", kimiUsage(1200, 180, 30000, 800, fmt.Sprintf("chatcmpl-%d-1", turn)))
		for i := 0; i < 3; i++ {
			j.ev(t+3, "ToolResult", kimiResult(fmt.Sprintf("tool_r%d_%d", turn, i), bigText))
		}
		j.ev(t+3.1, "StepBegin", map[string]any{"n": 2})
		j.ev(t+4, "ContentPart", map[string]any{"type": "text", "text": "Running the tests."})
		sh := fmt.Sprintf("tool_s%d", turn)
		j.ev(t+4.2, "ToolCall", kimiCall(sh, "Shell", `{"command": "python -m pytest -q"}`))
		j.ev(t+4.3, "StatusUpdate", kimiUsage(900, 60, 33000, 0, fmt.Sprintf("chatcmpl-%d-2", turn)))
		j.ev(t+6, "ToolResult", kimiResult(sh, bigText[:3000]))
		if turn%5 == 4 {
			agent := fmt.Sprintf("a%08x", turn)
			call := fmt.Sprintf("tool_a%d", turn)
			prompt := fmt.Sprintf("Find where turn %d's setting is read and report the file and line.", turn)
			args, _ := json.Marshal(map[string]any{"description": "find the setting", "prompt": prompt, "subagent_type": "explore"})
			j.ev(t+6.1, "StepBegin", map[string]any{"n": 3})
			j.ev(t+6.5, "ToolCall", kimiCall(call, "Agent", string(args)))
			j.ev(t+6.6, "StatusUpdate", kimiUsage(400, 90, 36000, 0, fmt.Sprintf("chatcmpl-%d-3", turn)))
			sw, err := create(filepath.Join(sess, "subagents", agent, "wire.jsonl"), &total)
			if err != nil {
				return "", err
			}
			sub := &kimiJournal{sw}
			sub.raw(`{"type": "metadata", "protocol_version": "1.8"}`)
			fwd := func(at float64, typ string, payload any) {
				sub.ev(at, typ, payload)
				j.ev(at, "SubagentEvent", map[string]any{"parent_tool_call_id": call, "agent_id": agent, "subagent_type": "explore",
					"event": map[string]any{"type": typ, "payload": payload}})
			}
			fwd(t+6.7, "TurnBegin", map[string]any{"user_input": prompt})
			fwd(t+6.71, "StepBegin", map[string]any{"n": 1})
			g := "tool_g" + agent
			fwd(t+7, "ToolCall", kimiCall(g, "Grep", `{"pattern": "setting", "path": "src"}`))
			fwd(t+7.1, "StatusUpdate", kimiUsage(3000, 40, 0, 0, "chatcmpl-sub-1-"+agent))
			fwd(t+7.5, "ToolResult", kimiResult(g, bigText[:2000]))
			fwd(t+7.6, "StepBegin", map[string]any{"n": 2})
			fwd(t+8, "ContentPart", map[string]any{"type": "text", "text": "It is read in src/config.py, line 12."})
			fwd(t+8.1, "StatusUpdate", kimiUsage(500, 30, 3000, 0, "chatcmpl-sub-2-"+agent))
			fwd(t+8.2, "TurnEnd", map[string]any{})
			if err := sw.close(); err != nil {
				return "", err
			}
			meta := fmt.Sprintf(`{"agent_id": %q, "subagent_type": "explore", "status": "idle", "description": "find the setting", "created_at": %f, "updated_at": %f, "launch_spec": {"effective_model": "kimi-k2"}}`,
				agent, kimiStart+t+6.6, kimiStart+t+8.2)
			if err := os.WriteFile(filepath.Join(sess, "subagents", agent, "meta.json"), []byte(meta), 0o644); err != nil {
				return "", err
			}
			j.ev(t+8.3, "ToolResult", kimiResult(call, "agent_id: "+agent+"\nresumed: false\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\nIt is read in src/config.py, line 12."))
		}
		j.ev(t+9, "StepBegin", map[string]any{"n": 4})
		j.ev(t+10, "ContentPart", map[string]any{"type": "text", "text": fmt.Sprintf("Fixed the bug of turn %d; the tests pass.", turn)})
		j.ev(t+10.1, "StatusUpdate", kimiUsage(300, 120, 37000, 0, fmt.Sprintf("chatcmpl-%d-4", turn)))
		j.ev(t+10.2, "TurnEnd", map[string]any{})
		if turn%40 == 39 {
			j.ev(t+11, "CompactionBegin", map[string]any{})
			j.ev(t+12, "CompactionEnd", map[string]any{})
		}
	}
	if err := w.close(); err != nil {
		return "", err
	}
	return sess, nil
}
