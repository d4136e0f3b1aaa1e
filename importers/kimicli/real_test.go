package kimicli

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// rawTotals counts a Kimi CLI session folder's figures from its files
// alone, with none of the importer's code: steps, tool calls, tokens by
// kind from the top-level StatusUpdates (a sub-agent's from its own
// wire.jsonl, or from the events the trunk forwarded when that is gone),
// sub-agents (Agent calls, and sub-agent folders no call names) with
// their statuses, and the pairs of sub-agents whose runs overlap: from the
// call to its result (a background agent: to the finished_at of its
// task's notification), or to its last event when it never returned.
func rawTotals(t *testing.T, dir string) (importerstest.Totals, importerstest.Details) {
	t.Helper()
	var tot importerstest.Totals
	det := importerstest.Details{Statuses: map[string]int{}}
	type call struct {
		step       int
		agent      string
		start, end float64
		status     string
	}
	var calls []*call
	byID := map[string]*call{}
	step := 0
	forkSteps := map[int]bool{}
	lastEvent := map[string]float64{} // agent id -> its last event
	notices := map[string][2]any{}    // task id -> finished_at, status
	named := map[string]bool{}
	agentIn := regexp.MustCompile(`(?m)^agent_id: (\S+)`)
	taskIn := regexp.MustCompile(`(?m)^task_id: (\S+)`)
	ownWire := func(agent string) bool {
		_, err := os.Stat(filepath.Join(dir, "subagents", agent, "wire.jsonl"))
		return agent != "" && err == nil
	}

	var count func(typ string, p map[string]any, ts float64, trunk bool, agent string)
	count = func(typ string, p map[string]any, ts float64, trunk bool, agent string) {
		if !trunk && typ != "TurnBegin" {
			lastEvent[agent] = ts
		}
		switch typ {
		case "StepBegin":
			tot.Responses++
			if trunk {
				step++
			}
		case "StatusUpdate":
			u, _ := p["token_usage"].(map[string]any)
			if u == nil {
				return
			}
			num := func(k string) int64 { f, _ := u[k].(float64); return int64(f) }
			tot.In += num("input_other") + num("input_cache_read") + num("input_cache_creation")
			tot.Out += num("output")
			tot.Cached += num("input_cache_read")
			det.CacheWrite += num("input_cache_creation")
		case "ToolCall":
			fn, _ := p["function"].(map[string]any)
			name, _ := fn["name"].(string)
			if trunk && (name == "Agent" || name == "Task") {
				c := &call{step: step, start: ts, status: "interrupted"}
				var args struct{ Resume string }
				if s, _ := fn["arguments"].(string); json.Unmarshal([]byte(s), &args) == nil && args.Resume != "" {
					c.agent = args.Resume
				}
				calls = append(calls, c)
				id, _ := p["id"].(string)
				byID[id] = c
				forkSteps[step] = true
				return
			}
			tot.Tools++
			switch name {
			case "ReadFile", "ReadMediaFile", "Grep", "Glob", "SearchWeb", "FetchURL":
				det.Research++
			}
		case "ToolResult":
			id, _ := p["tool_call_id"].(string)
			c := byID[id]
			if c == nil || !trunk {
				return
			}
			rv, _ := p["return_value"].(map[string]any)
			out, _ := rv["output"].(string)
			isErr, _ := rv["is_error"].(bool)
			if m := agentIn.FindStringSubmatch(out); m != nil {
				c.agent = m[1]
			}
			switch m := taskIn.FindStringSubmatch(out); {
			case m != nil:
				c.status = "background:" + m[1]
			case isErr:
				c.status, c.end = "error or exhausted", ts
			case strings.Contains(out, "status: completed"):
				c.status, c.end = "ok", ts
			}
		case "Notification":
			if p["source_kind"] == "background_task" {
				pl, _ := p["payload"].(map[string]any)
				id, _ := p["source_id"].(string)
				notices[id] = [2]any{pl["finished_at"], pl["status"]}
			}
		case "SubagentEvent":
			agent, _ := p["agent_id"].(string)
			id, _ := p["parent_tool_call_id"].(string)
			if c := byID[id]; c != nil && c.agent == "" {
				c.agent = agent
			}
			if ownWire(agent) {
				return // counted from its own file
			}
			ev, _ := p["event"].(map[string]any)
			typ, _ := ev["type"].(string)
			inner, _ := ev["payload"].(map[string]any)
			count(typ, inner, ts, false, agent)
		}
	}
	readLines := func(path string, trunk bool, agent string) (first, lastTurnEnd float64) {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			var r struct {
				Timestamp float64
				Message   struct {
					Type    string
					Payload map[string]any
				}
			}
			if json.Unmarshal(sc.Bytes(), &r) != nil || r.Message.Type == "" {
				continue
			}
			if first == 0 {
				first = r.Timestamp
			}
			if r.Message.Type == "TurnEnd" {
				lastTurnEnd = r.Timestamp
			}
			count(r.Message.Type, r.Message.Payload, r.Timestamp, trunk, agent)
		}
		return first, lastTurnEnd
	}
	readLines(filepath.Join(dir, "wire.jsonl"), true, "")
	for _, c := range calls {
		named[c.agent] = true
	}
	var windows [][2]time.Time
	at := func(sec float64) time.Time {
		if sec == 0 {
			return time.Time{}
		}
		whole, frac := math.Modf(sec)
		return time.Unix(int64(whole), int64(frac*1e9))
	}
	subs, _ := filepath.Glob(filepath.Join(dir, "subagents", "*", "wire.jsonl"))
	for _, sub := range subs {
		agent := filepath.Base(filepath.Dir(sub))
		first, ended := readLines(sub, false, agent)
		if !named[agent] { // a sub-agent no call names: its own fork
			tot.SubAgents++
			det.Forks++
			det.Statuses["ok"]++
			windows = append(windows, [2]time.Time{at(first), at(ended)})
		}
	}
	for _, c := range calls {
		tot.SubAgents++
		if task, ok := strings.CutPrefix(c.status, "background:"); ok {
			c.status = "interrupted"
			if n, ok := notices[task]; ok && n[1] == "completed" {
				c.status = "ok"
				c.end, _ = n[0].(float64)
			}
		}
		if c.status == "interrupted" {
			c.end = lastEvent[c.agent]
		}
		det.Statuses[c.status]++
		windows = append(windows, [2]time.Time{at(c.start), at(c.end)})
	}
	det.Forks += len(forkSteps)
	tot.Overlapping = importerstest.Overlaps(windows)
	return tot, det
}

// checkRaw compares a session's totals and details with rawTotals.
func checkRaw(t *testing.T, dir string, s *importers.Session) {
	t.Helper()
	want, wantDet := rawTotals(t, dir)
	got, det := importerstest.Count(s), importerstest.Detail(s)
	if n := det.Statuses["error"] + det.Statuses["exhausted"]; n > 0 {
		det.Statuses["error or exhausted"] = n
		delete(det.Statuses, "error")
		delete(det.Statuses, "exhausted")
	}
	if got != want || !reflect.DeepEqual(det, wantDet) {
		t.Errorf("imported totals %+v %+v\nraw totals      %+v %+v\n%s", got, det, want, wantDet, importerstest.Dump(s))
	}
	t.Logf("totals %+v %+v", want, wantDet)
}

func readOne(t testing.TB, path string, opt importers.Options) *importers.Session {
	t.Helper()
	return importerstest.ReadOne(t, Format{}, path, opt)
}

// TestRead_RealSessions imports the real Kimi CLI sessions of
// ../shared/transcripts and compares every total with rawTotals.
func TestRead_RealSessions(t *testing.T) {
	for _, name := range []string{"with-tool-calls", "with-subagent-collapsed"} {
		t.Run(name, func(t *testing.T) {
			dir := importerstest.Sample(t, "kimi-cli/"+name)
			s := readOne(t, dir, importers.Options{})
			checkRaw(t, dir, s)
			if len(s.Report.Skipped) != 0 {
				t.Errorf("skipped %v: every record type of a real session is known", s.Report.Skipped)
			}
			if s.Source.Format != Name || s.Source.ID != name || s.Source.Path != dir {
				t.Errorf("source = %+v", s.Source)
			}
		})
	}
}

// TestRead_WithToolCalls pins the facts of the scripted real session: the
// hook-blocked Shell call is a failed tool of the first step, whose
// response ends at its StatusUpdate; the title comes from state.json.
func TestRead_WithToolCalls(t *testing.T) {
	s := readOne(t, importerstest.Sample(t, "kimi-cli/with-tool-calls"), importers.Options{})
	if s.Title != "run echo hi" || !reflect.DeepEqual(s.Tasks, []string{"run echo hi"}) {
		t.Errorf("title %q, tasks %q", s.Title, s.Tasks)
	}
	steps := s.Trunk.Steps
	if len(steps) != 4 || steps[0].User == nil || steps[1].LLM == nil || steps[2].Tool == nil || steps[3].LLM == nil {
		t.Fatalf("steps:\n%s", importerstest.Dump(s))
	}
	l, tool := steps[1].LLM, steps[2].Tool
	at := func(sec float64) time.Time {
		whole, frac := math.Modf(sec)
		return time.Unix(int64(whole), int64(frac*1e9)).UTC()
	}
	if l.Usage != (record.Usage{In: 10, Out: 2, CachedReported: true, CacheWriteReported: true}) ||
		!reflect.DeepEqual(l.Calls, []string{"Shell"}) || l.Status != record.StatusOK {
		t.Errorf("first step: %+v", l)
	}
	if d := l.Ended.Sub(at(1774949785.2407029)); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("first step ends %v, want its StatusUpdate's time", l.Ended)
	}
	if tool.Name != "Shell" || tool.CallID != "tc1" || tool.Args != `{"command": "echo hi"}` ||
		tool.Status != record.StatusError || tool.Result != "Shell blocked by hook" || tool.Error != "Hook blocked" || tool.Research {
		t.Errorf("tool: %+v", tool)
	}
	// The journal stops inside the second step: nothing says it completed.
	if last := steps[3].LLM; last.Content != "OK, shell was blocked." || last.Status != record.StatusInterrupted {
		t.Errorf("second step: %+v", last)
	}
	if !s.Trunk.Ended.IsZero() || !s.Ended.IsZero() {
		t.Errorf("the turn never ended, yet the session ends at %v", s.Ended)
	}
}

// TestRead_SubagentCollapsed pins the real session with three parallel
// Agent calls cut to its first ten lines: the two calls it still has are
// one fork; the first sub-agent's branch is rebuilt from its forwarded
// events (its folder is not part of the sample) and the second, whose
// arguments are cut short, still gets its description and prompt head.
func TestRead_SubagentCollapsed(t *testing.T) {
	s := readOne(t, importerstest.Sample(t, "kimi-cli/with-subagent-collapsed"), importers.Options{})
	var fork *importers.Fork
	for _, st := range s.Trunk.Steps {
		if st.Fork != nil {
			if fork != nil {
				t.Fatal("two forks; the calls are of one step")
			}
			fork = st.Fork
		}
	}
	if fork == nil || len(fork.Branches) != 2 || fork.Tool != "Agent" || !fork.JoinAt.IsZero() {
		t.Fatalf("fork:\n%s", importerstest.Dump(s))
	}
	b1, b2 := fork.Branches[0], fork.Branches[1]
	if b1.Name != "Sub agent 1: 创建文件" || b1.ID != "ac1f74988" || b1.Agent != "coder" || b1.CallID != "tool_Ct3NdbCjJ2Xbl7YzithE2Dy8" ||
		!strings.HasPrefix(b1.Instructions, "你是一个测试用的 sub agent。") {
		t.Errorf("branch 1: %+v", b1)
	}
	// Its first forwarded event, the TurnBegin with the prompt, is the
	// fork's instructions; then one step that never completed.
	if c := b1.Conv; c.Status != record.StatusInterrupted || !c.Ended.IsZero() || len(c.Steps) != 1 ||
		c.Steps[0].LLM == nil || c.Steps[0].LLM.Status != record.StatusInterrupted {
		t.Errorf("branch 1's conversation from its forwarded events:\n%s", importerstest.Dump(s))
	}
	if b2.Name != "Sub agent 2: Shell 命令" || b2.CallID != "tool_OtoGSYsrDQpEaav0hLYbXDhd" ||
		!strings.Contains(b2.Instructions, "echo \"Hello from Sub Agent 2!\" > subagent2_test.txt") ||
		b2.Conv.Status != record.StatusInterrupted || len(b2.Conv.Steps) != 0 {
		t.Errorf("branch 2: %+v %+v", b2, b2.Conv)
	}
	if s.Trunk.System != "You are an AI agent. (system prompt elided in fixture)" {
		t.Errorf("system prompt %q: want context.jsonl's _system_prompt", s.Trunk.System)
	}
	// The call's arguments: the ToolCall's head and the ToolCallPart
	// that came after the first sub-agent's events, still cut short.
	if !strings.HasPrefix(b2.Args, `{"description": "Sub agent 2: Shell 命令", "prompt": "`) || !strings.HasSuffix(b2.Args, "完成后，") {
		t.Errorf("args %q", b2.Args)
	}
	if got := s.Trunk.Steps[1].LLM.Calls; !reflect.DeepEqual(got, []string{"Agent", "Agent"}) {
		t.Errorf("calls %v", got)
	}
	if len(s.Report.Problems) != 2 {
		t.Errorf("problems %+v: want one note for the missing folder of ac1f74988 and one for the unnamed second sub-agent", s.Report.Problems)
	}
}
