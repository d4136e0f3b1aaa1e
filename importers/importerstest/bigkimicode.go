package importerstest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// kimiCodeJournal writes one agent's journal of the TypeScript Kimi Code
// CLI (agents/<id>/wire.jsonl: {"type", …payload, "time": epoch ms}).
type kimiCodeJournal struct {
	*sizedWriter
	agent string
}

const kimiCodeStart = 1779256800000.0 // ms

func (j *kimiCodeJournal) rec(ms float64, typ string, fields map[string]any) {
	m := map[string]any{"type": typ, "agentId": j.agent, "time": int64(kimiCodeStart + ms)}
	for k, v := range fields {
		m[k] = v
	}
	j.line(m)
}

func (j *kimiCodeJournal) loop(ms float64, event map[string]any) {
	j.rec(ms, "context.append_loop_event", map[string]any{"event": event})
}

func (j *kimiCodeJournal) header(profile string) {
	j.raw(fmt.Sprintf(`{"type":"metadata","protocol_version":"1.5","created_at":%d}`, int64(kimiCodeStart)))
	j.rec(0, "config.update", map[string]any{"environmentDisclosure": map[string]any{"cwd": "/nonexistent/app"}, "profileName": profile,
		"systemPrompt": "You are Kimi Code, a coding agent. Work in the user's repository."})
}

func kimiCodeTokens(other, out, read, creation int64) map[string]any {
	return map[string]any{"inputOther": other, "output": out, "inputCacheRead": read, "inputCacheCreation": creation}
}

// step writes one step with its text, its usage and its calls
// (each [name, args, result]), the step's end; the result of each call
// comes before the end.
func (j *kimiCodeJournal) step(ms float64, uuid, text string, u map[string]any, calls ...[3]string) {
	j.loop(ms, map[string]any{"type": "step.begin", "uuid": uuid, "turnId": "t", "step": 0})
	if text != "" {
		j.loop(ms+1, map[string]any{"type": "content.part", "stepUuid": uuid, "part": map[string]any{"type": "text", "text": text}})
	}
	for i, c := range calls {
		j.loop(ms+2+float64(i), map[string]any{"type": "tool.call", "stepUuid": uuid, "toolCallId": uuid + "-" + fmt.Sprint(i), "name": c[0], "args": rawJSON(c[1])})
	}
	j.rec(ms+10, "usage.record", map[string]any{"model": "kimi-k2", "usage": u, "usageScope": "turn"})
	for i, c := range calls {
		j.loop(ms+20+float64(i), map[string]any{"type": "tool.result", "toolCallId": uuid + "-" + fmt.Sprint(i), "result": map[string]any{"output": c[2], "isError": false}})
	}
	reason := "end_turn"
	if len(calls) > 0 {
		reason = "tool_calls"
	}
	j.loop(ms+30, map[string]any{"type": "step.end", "uuid": uuid, "finishReason": reason, "usage": u})
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

func (j *kimiCodeJournal) prompt(ms float64, text string) {
	j.rec(ms, "turn.prompt", map[string]any{"input": []any{map[string]any{"type": "text", "text": text}}, "origin": "user"})
}

func (j *kimiCodeJournal) ended(ms float64) {
	j.rec(ms, "turn.ended", map[string]any{"turnId": 1, "reason": "completed"})
}

func kimiCodeTask(typ, task, agent, call string, startMs, endMs float64) map[string]any {
	info := map[string]any{"taskId": task, "kind": "agent", "agentId": agent, "subagentType": "explore", "parentToolCallId": call,
		"model": "kimi-k2-turbo", "description": "find the setting", "status": "running", "startedAt": int64(kimiCodeStart + startMs), "endedAt": nil}
	if typ == "task.terminated" {
		info["status"], info["endedAt"] = "completed", int64(kimiCodeStart+endMs)
	}
	return map[string]any{"info": info}
}

// BigKimiCode writes a Kimi Code session folder of at least size bytes
// under dir (sessions/<bucket>/big/ with state.json, agents/main/wire.jsonl
// and agents/agent-N/wire.jsonl) and returns the folder's path. Each turn:
// a step that says a line and reads three files (8 KiB results), a step
// with a shell call, and a closing answer; every fifth turn an Agent call
// whose sub-agent (task.started and task.terminated in the trunk's
// journal) greps and answers, every twentieth one whose sub-agent starts a
// sub-agent of its own; a compaction every 40 turns.
func BigKimiCode(dir string, size int64) (string, error) {
	sess := filepath.Join(dir, "sessions", "wd_app_0123456789ab", "big")
	var total int64
	w, err := create(filepath.Join(sess, "agents", "main", "wire.jsonl"), &total)
	if err != nil {
		return "", err
	}
	j := &kimiCodeJournal{w, "main"}
	j.header("agent")
	j.rec(1, "llm.tools_snapshot", map[string]any{"hash": "h", "tools": []any{
		map[string]any{"name": "Read", "description": "read a file", "parameters": map[string]any{"type": "object"}},
		map[string]any{"name": "Bash", "description": "run a command", "parameters": map[string]any{"type": "object"}},
		map[string]any{"name": "Agent", "description": "start a sub-agent", "parameters": map[string]any{"type": "object"}}}})
	var agents [][2]string // id, parent
	sub := func(id, parent, prompt string, at float64, body func(s *kimiCodeJournal)) error {
		sw, err := create(filepath.Join(sess, "agents", id, "wire.jsonl"), &total)
		if err != nil {
			return err
		}
		s := &kimiCodeJournal{sw, id}
		s.header("explore")
		s.prompt(at, prompt)
		agents = append(agents, [2]string{id, parent})
		body(s)
		return sw.close()
	}
	at := 0.0
	for turn := 0; total < size && j.err == nil; turn++ {
		at += 20000
		t := at
		j.prompt(t, fmt.Sprintf("turn %d: look at the three files and fix the bug", turn))
		var reads [][3]string
		for i := 0; i < 3; i++ {
			reads = append(reads, [3]string{"Read", fmt.Sprintf(`{"path":"src/f%d_%d.py"}`, turn, i), bigText})
		}
		j.step(t+100, fmt.Sprintf("s%d-1", turn), "Reading the three files.", kimiCodeTokens(1200, 180, 30000, 800), reads...)
		j.step(t+1000, fmt.Sprintf("s%d-2", turn), "Running the tests.", kimiCodeTokens(900, 60, 33000, 0), [3]string{"Bash", `{"command":"python -m pytest -q"}`, bigText[:3000]})
		if turn%5 == 4 {
			id := fmt.Sprintf("agent-%d", len(agents))
			uuid := fmt.Sprintf("s%d-3", turn)
			call := uuid + "-0"
			prompt := fmt.Sprintf("Find where turn %d's setting is read and report the file and line.", turn)
			j.loop(t+2000, map[string]any{"type": "step.begin", "uuid": uuid, "turnId": "t", "step": 0})
			j.loop(t+2001, map[string]any{"type": "tool.call", "stepUuid": uuid, "toolCallId": call, "name": "Agent",
				"args": map[string]any{"description": "find the setting", "prompt": prompt, "subagent_type": "explore"}})
			j.rec(t+2010, "usage.record", map[string]any{"model": "kimi-k2", "usage": kimiCodeTokens(400, 90, 36000, 0), "usageScope": "turn"})
			j.rec(t+2020, "task.started", kimiCodeTask("task.started", "task-"+id, id, call, 2020+t, 0))
			nested := turn%20 == 19
			err := sub(id, "main", prompt, t+2030, func(s *kimiCodeJournal) {
				var calls [][3]string
				calls = append(calls, [3]string{"Grep", `{"pattern":"setting","path":"src"}`, bigText[:2000]})
				s.step(t+2100, "c1", "", kimiCodeTokens(3000, 40, 0, 0), calls...)
				if nested {
					child := fmt.Sprintf("agent-%d", len(agents))
					s.loop(t+2200, map[string]any{"type": "step.begin", "uuid": "c2", "turnId": "t", "step": 1})
					s.loop(t+2201, map[string]any{"type": "tool.call", "stepUuid": "c2", "toolCallId": "n1", "name": "Agent",
						"args": map[string]any{"description": "check the line", "prompt": "check line 12", "subagent_type": "explore"}})
					s.rec(t+2210, "usage.record", map[string]any{"model": "kimi-k2", "usage": kimiCodeTokens(500, 20, 3000, 0), "usageScope": "turn"})
					s.rec(t+2220, "task.started", kimiCodeTask("task.started", "task-"+child, child, "n1", t+2220, 0))
					s.rec(t+2600, "task.terminated", kimiCodeTask("task.terminated", "task-"+child, child, "n1", t+2220, t+2600))
					s.loop(t+2610, map[string]any{"type": "tool.result", "toolCallId": "n1", "result": map[string]any{
						"output": "agent_id: " + child + "\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\nline 12 is right", "isError": false}})
					s.loop(t+2620, map[string]any{"type": "step.end", "uuid": "c2", "finishReason": "tool_calls", "usage": kimiCodeTokens(500, 20, 3000, 0)})
				}
				s.step(t+2700, "c3", "It is read in src/config.py, line 12.", kimiCodeTokens(500, 30, 3000, 0))
				s.ended(t + 2800)
			})
			if err != nil {
				return "", err
			}
			if nested {
				err := sub(fmt.Sprintf("agent-%d", len(agents)), id, "check line 12", t+2230, func(s *kimiCodeJournal) {
					s.step(t+2300, "d1", "line 12 is right", kimiCodeTokens(800, 10, 0, 0))
					s.ended(t + 2500)
				})
				if err != nil {
					return "", err
				}
			}
			j.rec(t+2900, "task.terminated", kimiCodeTask("task.terminated", "task-"+id, id, call, 2020+t, t+2900))
			j.loop(t+2910, map[string]any{"type": "tool.result", "toolCallId": call, "result": map[string]any{
				"output": "agent_id: " + id + "\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\nIt is read in src/config.py, line 12.", "isError": false}})
			j.loop(t+2920, map[string]any{"type": "step.end", "uuid": uuid, "finishReason": "tool_calls", "usage": kimiCodeTokens(400, 90, 36000, 0)})
		}
		j.step(t+5000, fmt.Sprintf("s%d-4", turn), fmt.Sprintf("Fixed the bug of turn %d; the tests pass.", turn), kimiCodeTokens(300, 120, 37000, 0))
		j.ended(t + 5100)
		if turn%40 == 39 {
			j.rec(t+6000, "context.apply_compaction", map[string]any{"summary": "summary of the turns so far", "compactedCount": 40})
			j.rec(t+6001, "usage.record", map[string]any{"model": "kimi-k2", "usage": kimiCodeTokens(5000, 400, 0, 0), "usageScope": "session"})
		}
	}
	if err := w.close(); err != nil {
		return "", err
	}
	var st strings.Builder
	st.WriteString(`{"title":"a long generated session","createdAt":"2026-05-20T06:00:00.000Z","agents":{"main":{"type":"main","parentAgentId":null}`)
	for _, a := range agents {
		fmt.Fprintf(&st, `,%q:{"type":"sub","parentAgentId":%q}`, a[0], a[1])
	}
	st.WriteString("}}\n")
	if err := os.WriteFile(filepath.Join(sess, "state.json"), []byte(st.String()), 0o644); err != nil {
		return "", err
	}
	return sess, nil
}
