package importerstest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"
)

// geminiChat writes the records of one Gemini CLI 0.61 chat file (the
// session's, or one sub-agent's): JSON lines, a message written again
// under its id as it grows, {"$set": ...} patches between them.
type geminiChat struct {
	*sizedWriter
	start time.Time
	id    string // the chat's sessionId
	n     int    // messages written
}

func (g *geminiChat) at(sec float64) string {
	return g.start.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000Z")
}

// msgID is a new message id, unique in the session.
func (g *geminiChat) msgID() string {
	g.n++
	return fmt.Sprintf("%.8s-%04x-4000-8000-%012x", g.id, g.n>>16&0xffff, g.n)
}

func (g *geminiChat) updated(sec float64) {
	g.line(map[string]any{"$set": map[string]any{"lastUpdated": g.at(sec)}})
}

func geminiParts(text string) []any { return []any{map[string]any{"text": text}} }

// user writes a user message (content parts) and the lastUpdated patch
// after it; it returns the message.
func (g *geminiChat) user(sec float64, content any) map[string]any {
	m := map[string]any{"id": g.msgID(), "timestamp": g.at(sec), "type": "user", "content": content}
	g.line(m)
	g.updated(sec)
	return m
}

func geminiTokens(in, out, cached int64) map[string]any {
	return map[string]any{"input": in, "output": out, "cached": cached, "thoughts": 0, "tool": 0, "total": in + out}
}

// response writes a model response: first as it came (no calls), then,
// when it made calls, again under the same id with them and their results
// once they returned, as the CLI records it.
func (g *geminiChat) response(sec float64, text string, tokens map[string]any, calls []any) map[string]any {
	m := map[string]any{"id": g.msgID(), "timestamp": g.at(sec), "type": "gemini", "content": text, "thoughts": []any{},
		"tokens": tokens, "model": "gemini-3.8-flash"}
	g.line(m)
	g.updated(sec)
	if len(calls) > 0 {
		m["toolCalls"] = calls
		g.line(m)
	}
	return m
}

func geminiResponse(id, name string, response map[string]any) []any {
	return []any{map[string]any{"functionResponse": map[string]any{"id": id, "name": name, "response": response}}}
}

// call is one tool call record with its result.
func (g *geminiChat) call(sec float64, id, name string, args map[string]any, output, display string) map[string]any {
	return map[string]any{"id": id, "name": name, "args": args, "result": geminiResponse(id, name, map[string]any{"output": output}),
		"status": "success", "timestamp": g.at(sec), "resultDisplay": display, "displayName": name, "renderOutputAsMarkdown": true}
}

// responses writes the user message that carries the calls' results back
// to the model.
func (g *geminiChat) responses(sec float64, calls []any) {
	var parts []any
	for _, c := range calls {
		parts = append(parts, c.(map[string]any)["result"].([]any)...)
	}
	g.user(sec, parts)
}

const geminiContext = "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nMy operating system is: linux\n" +
	"- **Workspace Directories:**\n  - /nonexistent/app\n- **Directory Structure:**\n\n/nonexistent/app/\n├───src/\n└───tests/\n\n</session_context>"

// BigGemini writes a Gemini CLI session of at least size bytes (its
// sub-agents' chats counted) under dir/tmp/app/chats in the shape of the
// harness's real Gemini CLI 0.61 files (testdata/agents/gemini): the
// session context as the first "$set" list; each turn a prompt, a
// response written twice (then with three parallel read_file calls, 8 KiB
// results) and the results going back, a final answer; every fifth turn a
// response with two parallel invoke_agent calls, each sub-agent a chat of
// its own in chats/<session id>/<agentId>.jsonl (a read and complete_task);
// an info notice every seventh turn; every 40 turns a compression (a
// "$set" list of the <state_snapshot> summary, the CLI's own reply and the
// kept history again under new ids), and every 80 the session resumed (a
// new header and the history written again). It returns the session
// file's path.
func BigGemini(dir string, size int64) (string, error) {
	const session = "7e3a1c00-0000-4000-8000-000000000001"
	chats := filepath.Join(dir, "tmp", "app", "chats")
	var total int64
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(chats, "session-2026-03-01T10-00-"+session[:8]+".jsonl")
	w, err := create(path, &total)
	if err != nil {
		return "", err
	}
	g := &geminiChat{sizedWriter: w, start: start, id: session}
	header := func(sec float64) {
		g.line(map[string]any{"sessionId": session, "projectHash": "6bce5e9e3c828f37e9efd18981511b74eff4451086fac223b2bc3d831f3eec8a",
			"startTime": g.at(sec), "lastUpdated": g.at(sec), "kind": "main"})
	}
	header(0)
	ctxMsg := map[string]any{"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": g.at(0), "type": "user", "content": geminiParts(geminiContext)}
	g.line(map[string]any{"$set": map[string]any{"messages": []any{ctxMsg}, "lastUpdated": g.at(0)}})
	history := []any{ctxMsg} // what a resume writes again
	var in int64 = 11000
	sec := 0.0
	for turn := 0; total < size && g.err == nil; turn++ {
		sec += 30
		prompt := g.user(sec, geminiParts(fmt.Sprintf("turn %d: read the three files and fix the bug", turn)))
		var calls []any
		for i := 0; i < 3; i++ {
			id := fmt.Sprintf("read_file__read_file_%d_%d", 1796189085000+turn, i)
			calls = append(calls, g.call(sec+1.5, id, "read_file", map[string]any{"file_path": fmt.Sprintf("/nonexistent/app/src/f%d_%d.py", turn, i)}, bigText, ""))
		}
		in += 6200
		g.response(sec+1, "", geminiTokens(in, 90, in/2), calls)
		g.responses(sec+1.6, calls)
		if turn%5 == 4 {
			var delegated []any
			for i := 0; i < 2; i++ {
				agent := fmt.Sprintf("a9e00000-0000-4000-8000-%012x", 2*turn+i)
				task := fmt.Sprintf("[task:%d.%d] find where setting %d is read and answer in one line", turn, i, i)
				answer := fmt.Sprintf("Setting %d of turn %d is read in src/config.py, line %d.", i, turn, 12+i)
				if err := geminiSubagent(chats, session, agent, start, sec+2.1, task, answer, &total); err != nil {
					return "", err
				}
				id := fmt.Sprintf("invoke_agent__invoke_agent_%d_%d", 1796189086000+turn, i)
				c := g.call(sec+6, id, "invoke_agent", map[string]any{"agent_name": "generalist", "prompt": task},
					"Subagent 'generalist' finished.\nTermination Reason: GOAL\nResult:\n{\n  \"response\": "+jsonString(answer)+"\n}", "")
				c["agentId"] = agent
				c["resultDisplay"] = map[string]any{"isSubagentProgress": true, "agentName": "generalist", "state": "completed",
					"terminateReason": "GOAL", "result": answer}
				delegated = append(delegated, c)
			}
			in += 400
			g.response(sec+2, "", geminiTokens(in, 110, in/2), delegated)
			g.responses(sec+6.1, delegated)
		}
		if turn%7 == 3 {
			g.line(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 6.2), "type": "info", "content": "Switched to fallback model"})
		}
		in += 300
		answer := g.response(sec+7, fmt.Sprintf("Fixed the bug of turn %d; the tests pass.", turn), geminiTokens(in, 20, in/2), nil)
		history = append(history, prompt, answer)
		if turn%40 == 39 {
			// The CLI compresses as the context fills: a list of the
			// summary, its own reply and the last turn kept.
			snapshot := map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "user",
				"content": geminiParts(fmt.Sprintf("<state_snapshot>\nThe bugs of turns up to %d are fixed; the tests pass.\n</state_snapshot>", turn))}
			reply := map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "gemini", "content": geminiParts("Got it. Thanks for the additional context!")}
			keptPrompt := map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "user", "content": prompt["content"]}
			keptAnswer := map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "gemini", "content": answer["content"]}
			history = []any{ctxMsg, snapshot, reply, keptPrompt, keptAnswer}
			g.line(map[string]any{"$set": map[string]any{"messages": history}})
			g.updated(sec + 8)
			in = 11000
		}
		if turn%80 == 79 {
			// The session resumed: a new header, the history written
			// again from memory.
			header(sec + 20)
			g.line(map[string]any{"$set": map[string]any{"messages": []any{ctxMsg}}})
			g.line(map[string]any{"$set": map[string]any{"sessionId": session}})
			g.line(map[string]any{"$set": map[string]any{"messages": history}})
			sec += 20
		}
	}
	g.line(map[string]any{"$set": map[string]any{"summary": "Fix the bugs turn by turn"}})
	if err := w.close(); err != nil {
		return "", err
	}
	return path, nil
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// geminiSubagent writes one sub-agent's chat: its task, a read_file call
// (2,000 bytes) and complete_task with its answer.
func geminiSubagent(chats, session, agent string, start time.Time, sec float64, task, answer string, total *int64) error {
	w, err := create(filepath.Join(chats, session, agent+".jsonl"), total)
	if err != nil {
		return err
	}
	s := &geminiChat{sizedWriter: w, start: start, id: agent}
	s.line(map[string]any{"sessionId": agent, "projectHash": "6bce5e9e3c828f37e9efd18981511b74eff4451086fac223b2bc3d831f3eec8a",
		"startTime": s.at(sec), "lastUpdated": s.at(sec), "kind": "subagent", "directories": []string{"/nonexistent/app"}})
	s.user(sec+0.01, geminiParts(task))
	read := []any{s.call(sec+1, agent+"#0-0", "read_file", map[string]any{"file_path": "/nonexistent/app/src/config.py"}, bigText[:2000], "")}
	s.response(sec+0.5, "", geminiTokens(11800, 30, 5900), read)
	s.responses(sec+1.1, read)
	done := []any{s.call(sec+2, agent+"#1-0", "complete_task", map[string]any{"result": map[string]any{"response": answer}},
		"Output submitted and task completed.", "Output submitted and task completed.")}
	s.response(sec+1.5, "", geminiTokens(14000, 25, 7000), done)
	s.line(map[string]any{"$set": map[string]any{"summary": "{\n  \"response\": " + jsonString(answer) + "\n}"}})
	return w.close()
}

// BigGeminiJSON writes a single-JSON Gemini CLI session file (the format
// of versions before JSON lines: one object, indented, its "messages" the
// whole list, each message once) of at least size bytes under
// dir/tmp/app/chats, its turns those of BigGemini without sub-agents (a
// prompt, a response with three parallel read_file calls of 8 KiB, the
// results back, an answer; a compression every 40 turns, read in place).
// It returns the file's path.
func BigGeminiJSON(dir string, size int64) (string, error) {
	const session = "7e3a1c00-0000-4000-8000-000000000002"
	path := filepath.Join(dir, "tmp", "app", "chats", "session-2026-03-01T10-00-"+session[:8]+".json")
	var total int64
	w, err := create(path, &total)
	if err != nil {
		return "", err
	}
	g := &geminiChat{sizedWriter: w, start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), id: session}
	g.raw(`{`)
	g.raw(`  "sessionId": "` + session + `",`)
	g.raw(`  "projectHash": "6bce5e9e3c828f37e9efd18981511b74eff4451086fac223b2bc3d831f3eec8a",`)
	g.raw(`  "startTime": "` + g.at(0) + `",`)
	g.raw(`  "messages": [`)
	first := true
	msg := func(m map[string]any) {
		b, err := json.MarshalIndent(m, "    ", "  ")
		if err != nil {
			g.err = err
			return
		}
		if !first {
			g.raw("    ,")
		}
		first = false
		g.raw("    " + string(b))
	}
	msg(map[string]any{"id": "d04923d38bb0f6017037e74183378ef4", "timestamp": g.at(0), "type": "user", "content": geminiParts(geminiContext)})
	var in int64 = 11000
	sec := 0.0
	for turn := 0; total < size && g.err == nil; turn++ {
		sec += 30
		msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec), "type": "user", "content": fmt.Sprintf("turn %d: read the three files and fix the bug", turn)})
		var calls []any
		for i := 0; i < 3; i++ {
			id := fmt.Sprintf("read_file_%d_%d", 1796189085000+turn, i)
			calls = append(calls, g.call(sec+1.5, id, "read_file", map[string]any{"file_path": fmt.Sprintf("/nonexistent/app/src/f%d_%d.py", turn, i)}, bigText, ""))
		}
		in += 6200
		msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 1), "type": "gemini", "content": "", "thoughts": []any{},
			"tokens": geminiTokens(in, 90, in/2), "model": "gemini-2.5-pro", "toolCalls": calls})
		var parts []any
		for _, c := range calls {
			parts = append(parts, c.(map[string]any)["result"].([]any)...)
		}
		msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 1.6), "type": "user", "content": parts})
		in += 300
		msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 7), "type": "gemini", "content": fmt.Sprintf("Fixed the bug of turn %d; the tests pass.", turn),
			"thoughts": []any{}, "tokens": geminiTokens(in, 20, in/2), "model": "gemini-2.5-pro"})
		if turn%40 == 39 {
			msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "user",
				"content": geminiParts(fmt.Sprintf("<state_snapshot>\nThe bugs of turns up to %d are fixed.\n</state_snapshot>", turn))})
			msg(map[string]any{"id": g.msgID(), "timestamp": g.at(sec + 8), "type": "gemini", "content": geminiParts("Got it. Thanks for the additional context!")})
			in = 11000
		}
	}
	g.raw(`  ],`)
	g.raw(`  "lastUpdated": "` + g.at(sec+8) + `",`)
	g.raw(`  "summary": "Fix the bugs turn by turn"`)
	g.raw(`}`)
	if err := w.close(); err != nil {
		return "", err
	}
	return path, nil
}
