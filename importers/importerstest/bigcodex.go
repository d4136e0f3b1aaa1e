package importerstest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// codexLines writes Codex rollout records ({timestamp, type, payload}) of
// one thread.
type codexLines struct {
	*sizedWriter
	start time.Time
}

func (c *codexLines) rec(sec float64, typ string, payload any) {
	c.line(map[string]any{"timestamp": c.start.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000Z"),
		"type": typ, "payload": payload})
}

func (c *codexLines) item(sec float64, payload map[string]any) { c.rec(sec, "response_item", payload) }
func (c *codexLines) event(sec float64, payload map[string]any) {
	c.rec(sec, "event_msg", payload)
}

func (c *codexLines) tokens(sec float64, total, last [3]int64) {
	u := func(v [3]int64) map[string]any {
		return map[string]any{"input_tokens": v[0], "cached_input_tokens": v[1], "output_tokens": v[2], "reasoning_output_tokens": 0, "total_tokens": v[0] + v[2]}
	}
	c.event(sec, map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": u(total), "last_token_usage": u(last), "model_context_window": 258400},
		"rate_limits": map[string]any{"primary": map[string]any{"used_percent": 3.0}}})
}

func codexMessage(role, kind, text string) map[string]any {
	return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": kind, "text": text}}}
}

func codexShell(id, command string) map[string]any {
	args, _ := json.Marshal(map[string]any{"command": []string{"bash", "-lc", command}, "workdir": "/nonexistent/app"})
	return map[string]any{"type": "function_call", "name": "shell", "arguments": string(args), "call_id": id}
}

func codexOutput(id, output string) map[string]any {
	return map[string]any{"type": "function_call_output", "call_id": id, "output": output}
}

// BigCodex writes a Codex session of at least size bytes (its sub-agents'
// rollouts counted) under dir/sessions/2026/03/01, in the shape of the
// committed fixture (importers/codex/testdata): each turn a prompt, a
// response reading two files with shell calls (8 KiB outputs) and a
// response that answers; every fifth turn a spawn_agent call whose child
// has its own rollout (a shell call and an answer) and a wait for it; a
// compaction every 40 turns. It returns the parent rollout's path.
func BigCodex(dir string, size int64) (string, error) {
	day := filepath.Join(dir, "sessions", "2026", "03", "01")
	const root = "019a1c00-0000-7000-8000-000000000001"
	var total int64
	path := filepath.Join(day, "rollout-2026-03-01T10-00-00-"+root+".jsonl")
	w, err := create(path, &total)
	if err != nil {
		return "", err
	}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	m := &codexLines{sizedWriter: w, start: start}
	m.rec(0, "session_meta", map[string]any{"id": root, "timestamp": "2026-03-01T10:00:00.000Z", "cwd": "/nonexistent/app", "originator": "codex_cli_rs",
		"cli_version": "0.130.0", "source": "cli", "model_provider": "openai", "base_instructions": map[string]any{"text": "You are Codex."}})
	var in, out int64
	sec := 0.0
	for turn := 0; total < size && m.err == nil; turn++ {
		sec += 30
		tid := fmt.Sprintf("t%d", turn)
		m.rec(sec, "turn_context", map[string]any{"turn_id": tid, "cwd": "/nonexistent/app", "model": "gpt-5.1-codex", "effort": "medium"})
		m.event(sec+0.01, map[string]any{"type": "task_started", "turn_id": tid})
		prompt := fmt.Sprintf("turn %d: read the two files and fix the bug", turn)
		m.item(sec+0.1, codexMessage("user", "input_text", prompt))
		m.event(sec+0.11, map[string]any{"type": "user_message", "message": prompt, "images": []any{}})
		m.item(sec+1, map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": "Thinking."}}, "encrypted_content": "gAAAA"})
		for i := 0; i < 2; i++ {
			m.item(sec+1.1+float64(i)*0.01, codexShell(fmt.Sprintf("call_r%d_%d", turn, i), fmt.Sprintf("cat src/f%d_%d.py", turn, i)))
		}
		in, out = in+5200, out+180
		m.tokens(sec+1.2, [3]int64{in, in - 2000, out}, [3]int64{5200, 3000, 180})
		for i := 0; i < 2; i++ {
			m.item(sec+1.5, codexOutput(fmt.Sprintf("call_r%d_%d", turn, i), bigText))
		}
		if turn%5 == 4 {
			child := fmt.Sprintf("019a1c00-0000-7000-8000-%012x", 0x100000+turn)
			spawn, wait := fmt.Sprintf("call_s%d", turn), fmt.Sprintf("call_w%d", turn)
			task := fmt.Sprintf("find where turn %d's setting is read", turn)
			args, _ := json.Marshal(map[string]any{"message": task, "agent_type": "explorer"})
			m.item(sec+2, map[string]any{"type": "function_call", "name": "spawn_agent", "arguments": string(args), "call_id": spawn})
			in, out = in+5600, out+240
			m.tokens(sec+2.1, [3]int64{in, in - 2000, out}, [3]int64{5600, 5000, 240})
			m.item(sec+2.2, codexOutput(spawn, fmt.Sprintf(`{"agent_id": %q, "nickname": "Kepler"}`, child)))
			if err := codexChild(day, child, root, start, sec+2.3, task, &total); err != nil {
				return "", err
			}
			targs, _ := json.Marshal(map[string]any{"targets": []string{child}, "timeout_ms": 600000})
			m.item(sec+3, map[string]any{"type": "function_call", "name": "wait", "arguments": string(targs), "call_id": wait})
			in, out = in+5900, out+40
			m.tokens(sec+3.1, [3]int64{in, in - 2000, out}, [3]int64{5900, 5500, 40})
			m.item(sec+9, codexOutput(wait, fmt.Sprintf(`{"status": {%q: {"completed": "It is read in src/config.py, line 12."}}, "timed_out": false}`, child)))
		}
		answer := fmt.Sprintf("Fixed the bug of turn %d; the tests pass.", turn)
		m.item(sec+10, codexMessage("assistant", "output_text", answer))
		in, out = in+6700, out+30
		m.tokens(sec+10.1, [3]int64{in, in - 2000, out}, [3]int64{6700, 6400, 30})
		m.event(sec+10.11, map[string]any{"type": "agent_message", "message": answer})
		m.event(sec+10.2, map[string]any{"type": "task_complete", "turn_id": tid, "last_agent_message": answer})
		if turn%40 == 39 {
			// Codex compacts as the context fills: what the model sees stays bounded.
			m.rec(sec+11, "compacted", map[string]any{"message": "summary of the turns so far", "replacement_history": []any{}})
			m.event(sec+11.01, map[string]any{"type": "context_compacted"})
		}
	}
	if err := w.close(); err != nil {
		return "", err
	}
	return path, nil
}

// codexChild writes one sub-agent's rollout: a shell call and an answer.
func codexChild(day, id, parent string, start time.Time, sec float64, task string, total *int64) error {
	at := start.Add(time.Duration(sec * float64(time.Second)))
	w, err := create(filepath.Join(day, "rollout-"+at.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), total)
	if err != nil {
		return err
	}
	c := &codexLines{sizedWriter: w, start: start}
	c.rec(sec, "session_meta", map[string]any{"id": id, "timestamp": at.Format("2006-01-02T15:04:05.000Z"), "cwd": "/nonexistent/app",
		"originator": "codex_cli_rs", "cli_version": "0.130.0", "model_provider": "openai", "base_instructions": map[string]any{"text": "You are Codex."},
		"source":         map[string]any{"subagent": map[string]any{"thread_spawn": map[string]any{"parent_thread_id": parent, "depth": 1, "agent_nickname": "Kepler", "agent_role": "explorer"}}},
		"agent_nickname": "Kepler", "agent_role": "explorer"})
	c.rec(sec+0.01, "turn_context", map[string]any{"turn_id": "c" + id, "cwd": "/nonexistent/app", "model": "gpt-5.1-codex", "effort": "medium"})
	c.event(sec+0.02, map[string]any{"type": "task_started", "turn_id": "c" + id})
	c.item(sec+0.03, codexMessage("user", "input_text", task))
	c.item(sec+1, codexShell("c_"+id, "rg -n setting src"))
	c.tokens(sec+1.1, [3]int64{2100, 0, 50}, [3]int64{2100, 0, 50})
	c.item(sec+1.5, codexOutput("c_"+id, bigText[:2000]))
	c.item(sec+3, codexMessage("assistant", "output_text", "It is read in src/config.py, line 12."))
	c.tokens(sec+3.1, [3]int64{4600, 2048, 75}, [3]int64{2500, 2048, 25})
	c.event(sec+3.2, map[string]any{"type": "task_complete", "turn_id": "c" + id, "last_agent_message": "It is read in src/config.py, line 12."})
	return w.close()
}
