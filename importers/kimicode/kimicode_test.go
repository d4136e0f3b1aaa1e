package kimicode

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

func readOne(t testing.TB, path string, opt importers.Options) *importers.Session {
	t.Helper()
	return importerstest.ReadOne(t, Format{}, path, opt)
}

// rawTotals counts a Kimi Code session folder's figures from its files
// alone, with none of the importer's code: responses (step.begin, and
// usage records of session scope: compaction calls), tool calls (tool.call
// other than Agent/AgentSwarm), tokens by kind from usage.record (step.end
// repeats them), sub-agents (task.started of kind agent, else one per
// Agent call and one per AgentSwarm item) with their statuses from
// task.terminated, and the pairs of sub-agents whose runs overlap (from
// the task's start to its end, else the call's result, else the last
// event of the sub-agent's journal).
func rawTotals(t *testing.T, dir string) (importerstest.Totals, importerstest.Details) {
	t.Helper()
	var tot importerstest.Totals
	det := importerstest.Details{Statuses: map[string]int{}}
	wires, _ := filepath.Glob(filepath.Join(dir, "agents", "*", "wire.jsonl"))
	type task struct {
		agent, call string
		start, end  float64
	}
	var tasks []*task
	lastEvent := map[string]float64{} // agent -> its journal's last record
	results := map[string]float64{}   // call id -> result time
	for _, w := range wires {
		agent := filepath.Base(filepath.Dir(w))
		f, err := os.Open(w)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<26)
		items := map[string]int{}    // call id -> sub-agents its arguments ask for
		started := map[string]bool{} // call ids with task.started
		byTask := map[string]*task{}
		steps := map[string]bool{}
		for sc.Scan() {
			var r map[string]any
			if json.Unmarshal(sc.Bytes(), &r) != nil {
				continue
			}
			at, _ := r["time"].(float64)
			if r["type"] != "metadata" && r["type"] != "config.update" {
				lastEvent[agent] = at
			}
			switch r["type"] {
			case "context.append_loop_event":
				ev, _ := r["event"].(map[string]any)
				switch ev["type"] {
				case "step.begin":
					tot.Responses++
				case "tool.call":
					name, _ := ev["name"].(string)
					id, _ := ev["toolCallId"].(string)
					if name == "Agent" || name == "AgentSwarm" {
						step, _ := ev["stepUuid"].(string)
						steps[step] = true
						items[id] = 1
						if args, _ := ev["args"].(map[string]any); name == "AgentSwarm" {
							its, _ := args["items"].([]any)
							items[id] = len(its)
						}
						continue
					}
					tot.Tools++
					switch name {
					case "Read", "ReadMediaFile", "Grep", "Glob", "WebSearch", "FetchURL":
						det.Research++
					}
				case "tool.result":
					id, _ := ev["toolCallId"].(string)
					results[id] = at
				}
			case "usage.record":
				u, _ := r["usage"].(map[string]any)
				num := func(k string) int64 { f, _ := u[k].(float64); return int64(f) }
				tot.In += num("inputOther") + num("inputCacheRead") + num("inputCacheCreation")
				tot.Out += num("output")
				tot.Cached += num("inputCacheRead")
				det.CacheWrite += num("inputCacheCreation")
				if r["usageScope"] == "session" {
					tot.Responses++
				}
			case "task.started", "task.terminated":
				info, _ := r["info"].(map[string]any)
				if info["kind"] != "agent" {
					continue
				}
				id, _ := info["taskId"].(string)
				if r["type"] == "task.started" {
					tk := &task{}
					tk.agent, _ = info["agentId"].(string)
					tk.call, _ = info["parentToolCallId"].(string)
					tk.start, _ = info["startedAt"].(float64)
					started[tk.call] = true
					byTask[id] = tk
					tasks = append(tasks, tk)
					continue
				}
				if tk := byTask[id]; tk != nil {
					tk.end, _ = info["endedAt"].(float64)
				}
				status, _ := info["status"].(string)
				stop, _ := info["stopReason"].(string)
				switch {
				case status == "failed" && strings.Contains(stop, "maxSteps"):
					status = "exhausted"
				default:
					status = map[string]string{"completed": "ok", "failed": "error", "timed_out": "exhausted", "killed": "cancelled"}[status]
				}
				det.Statuses[status]++
			}
		}
		f.Close()
		det.Forks += len(steps)
		for call, n := range items {
			if !started[call] {
				tot.SubAgents += n
			}
		}
	}
	var windows [][2]time.Time
	ms := func(x float64) time.Time {
		if x == 0 {
			return time.Time{}
		}
		return time.UnixMilli(int64(x))
	}
	for _, tk := range tasks {
		tot.SubAgents++
		if tk.end == 0 {
			tk.end = results[tk.call]
		}
		if tk.end == 0 {
			tk.end = lastEvent[tk.agent]
			det.Statuses["interrupted"]++
		}
		windows = append(windows, [2]time.Time{ms(tk.start), ms(tk.end)})
	}
	tot.Overlapping = importerstest.Overlaps(windows)
	return tot, det
}

// checkRaw compares a session's totals and details with rawTotals.
func checkRaw(t *testing.T, dir string, s *importers.Session) {
	t.Helper()
	want, wantDet := rawTotals(t, dir)
	got, det := importerstest.Count(s), importerstest.Detail(s)
	if got != want || !reflect.DeepEqual(det, wantDet) {
		t.Errorf("imported totals %+v %+v\nraw totals      %+v %+v\n%s", got, det, want, wantDet, importerstest.Dump(s))
	}
	t.Logf("totals %+v %+v", want, wantDet)
}

// TestRead_RealSession imports the real (hand-written upstream) Kimi Code
// sample and compares its totals with rawTotals.
func TestRead_RealSession(t *testing.T) {
	dir := importerstest.Sample(t, "kimi-code/sample-main")
	s := readOne(t, dir, importers.Options{})
	checkRaw(t, dir, s)
	if s.Title != "fixture: hello world" || s.Dir != "/tmp/work" || s.Trunk.System != "You are Kimi." ||
		!reflect.DeepEqual(s.Models, []string{"kimi-k2"}) || !reflect.DeepEqual(s.Tasks, []string{"hi"}) {
		t.Errorf("session facts:\n%s\nsystem %q", importerstest.Dump(s), s.Trunk.System)
	}
	l := s.Trunk.Steps[1].LLM
	if l == nil || l.Usage != (record.Usage{In: 10, Out: 5, CachedReported: true, CacheWriteReported: true}) ||
		l.Content != "hello" || l.Model != "kimi-k2" || l.Status != record.StatusOK {
		t.Errorf("step: %+v", l)
	}
	// usage.record dates the response (2 ms after step.end here).
	if !l.Ended.Equal(time.UnixMilli(1779256800302).UTC()) {
		t.Errorf("ended %v", l.Ended)
	}
	// agent-0 has a journal with no turn: said, not a branch.
	if len(s.Report.Skipped) != 0 || len(s.Report.Problems) != 1 || !strings.Contains(s.Report.Problems[0].Err, "never started a turn") ||
		!strings.HasSuffix(s.Report.Problems[0].File, filepath.Join("agent-0", "wire.jsonl")) {
		t.Errorf("skipped %v, problems %+v", s.Report.Skipped, s.Report.Problems)
	}
	if s.Source.Format != Name || s.Source.ID != "sample-main" {
		t.Errorf("source %+v", s.Source)
	}
}

// --- hand-written sessions ---

const t0 = 1779256800000.0 // ms

type journal struct{ b strings.Builder }

func newJournal(agent string) *journal {
	profile := "explore"
	switch agent {
	case "main":
		profile = "agent"
	case "coder":
		profile = "coder"
	}
	j := &journal{}
	fmt.Fprintf(&j.b, `{"type":"metadata","protocol_version":"1.5","created_at":%d}`+"\n", int64(t0))
	fmt.Fprintf(&j.b, `{"type":"config.update","agentId":%q,"environmentDisclosure":{"cwd":"/home/dev/proj","date":{"disclosed":false}},"profileName":%q,"systemPrompt":"You are %s.","time":%d}`+"\n", agent, profile, agent, int64(t0))
	return j
}

// rec writes one record at ms after t0; fields is the payload without braces.
func (j *journal) rec(ms float64, typ, fields string) *journal {
	if fields != "" {
		fields += ","
	}
	fmt.Fprintf(&j.b, `{"type":%q,%s"time":%d}`+"\n", typ, fields, int64(t0+ms))
	return j
}

func (j *journal) raw(s string) *journal { j.b.WriteString(s); return j }

func (j *journal) prompt(ms float64, text string) *journal {
	return j.rec(ms, "turn.prompt", fmt.Sprintf(`"agentId":"x","input":[{"type":"text","text":%q}],"origin":"user"`, text))
}

func (j *journal) loop(ms float64, event string) *journal {
	return j.rec(ms, "context.append_loop_event", `"agentId":"x","event":`+event)
}

func (j *journal) step(ms float64, uuid string) *journal {
	return j.loop(ms, fmt.Sprintf(`{"type":"step.begin","uuid":%q,"turnId":"1","step":0}`, uuid))
}

func (j *journal) text(ms float64, uuid, text string) *journal {
	return j.loop(ms, fmt.Sprintf(`{"type":"content.part","stepUuid":%q,"part":{"type":"text","text":%q}}`, uuid, text))
}

func (j *journal) call(ms float64, uuid, id, name, args string) *journal {
	return j.loop(ms, fmt.Sprintf(`{"type":"tool.call","stepUuid":%q,"toolCallId":%q,"name":%q,"args":%s}`, uuid, id, name, args))
}

func (j *journal) result(ms float64, id, output string, isError bool) *journal {
	return j.loop(ms, fmt.Sprintf(`{"type":"tool.result","toolCallId":%q,"result":{"output":%q,"isError":%v}}`, id, output, isError))
}

func tokens(other, out, read, creation int) string {
	return fmt.Sprintf(`{"inputOther":%d,"output":%d,"inputCacheRead":%d,"inputCacheCreation":%d}`, other, out, read, creation)
}

func (j *journal) usage(ms float64, u string) *journal {
	return j.rec(ms, "usage.record", `"agentId":"x","model":"kimi-k2","usage":`+u+`,"usageScope":"turn"`)
}

func (j *journal) stepEnd(ms float64, uuid, u string) *journal {
	return j.loop(ms, fmt.Sprintf(`{"type":"step.end","uuid":%q,"finishReason":"tool_calls","usage":%s}`, uuid, u))
}

func (j *journal) ended(ms float64, reason, errJSON string) *journal {
	f := fmt.Sprintf(`"agentId":"x","turnId":1,"reason":%q`, reason)
	if errJSON != "" {
		f += `,"error":` + errJSON
	}
	return j.rec(ms, "turn.ended", f)
}

func taskRec(typ, task, agent, call, status string, started, ended float64, stop string) string {
	end := "null"
	if ended > 0 {
		end = fmt.Sprint(int64(t0 + ended))
	}
	return fmt.Sprintf(`"agentId":"main","info":{"taskId":%q,"kind":"agent","agentId":%q,"subagentType":"explore","parentToolCallId":%q,"model":"kimi-k2-turbo","description":"d","status":%q,"startedAt":%d,"endedAt":%s,"stopReason":%q}`,
		task, agent, call, status, int64(t0+started), end, stop)
}

func write(t testing.TB, path, content string) {
	t.Helper()
	importerstest.Write(t, filepath.Dir(path), filepath.Base(path), content)
}

// swarmSession writes: an AgentSwarm of three (completed, stopped by its
// step limit, killed) with task records; a serial Agent call whose
// sub-agent starts a sub-agent of its own; a final Agent call that never
// finished; a compaction; an unknown record type; a broken line; a cut
// last line.
func swarmSession(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "sess-1")
	swarmResult := "<agent_swarm_result>\n<summary>completed: 1, failed: 1, aborted: 1</summary>\n" +
		`<subagent agent_id="agent-0" item="a.go" state="started" outcome="completed">a is fine</subagent>` + "\n" +
		`<subagent agent_id="agent-1" item="b.go" state="started" outcome="failed">Turn exceeded maxSteps=3.</subagent>` + "\n" +
		`<subagent agent_id="agent-2" item="c.go" state="started" outcome="aborted">stopped</subagent>` + "\n</agent_swarm_result>"
	main := newJournal("main").
		rec(1, "llm.tools_snapshot", `"agentId":"main","hash":"h","tools":[{"name":"Read","description":"read a file","parameters":{"type":"object"}},{"name":"AgentSwarm","description":"many agents","parameters":{"type":"object"}}]`).
		prompt(10, "review the three files").
		step(20, "s1").
		usage(900, tokens(900, 120, 8000, 50)).
		call(1000, "s1", "sw1", "AgentSwarm", `{"description":"review","prompt_template":"Review {{item}}","items":["a.go","b.go","c.go"]}`).
		rec(1010, "task.started", taskRec("task.started", "agent-t0", "agent-0", "sw1", "running", 1010, 0, "")).
		rec(1011, "task.started", taskRec("task.started", "agent-t1", "agent-1", "sw1", "running", 1011, 0, "")).
		rec(1012, "task.started", taskRec("task.started", "agent-t2", "agent-2", "sw1", "running", 1012, 0, "")).
		rec(1500, "FancyNewRecord", `"x":1`).
		raw(`{"type":"usage.record","usage":`+"\n").
		rec(30000, "task.terminated", taskRec("task.terminated", "agent-t0", "agent-0", "sw1", "completed", 1010, 30000, "")).
		rec(40000, "task.terminated", taskRec("task.terminated", "agent-t1", "agent-1", "sw1", "failed", 1011, 40000, "Turn exceeded maxSteps=3.")).
		rec(41000, "task.terminated", taskRec("task.terminated", "agent-t2", "agent-2", "sw1", "killed", 1012, 41000, "")).
		result(41010, "sw1", swarmResult, false).
		stepEnd(41020, "s1", tokens(900, 120, 8000, 50)).
		step(42000, "s2").
		usage(43000, tokens(1000, 30, 9000, 0)).
		call(43010, "s2", "ag1", "Agent", `{"description":"deep dive","prompt":"dig into a.go","subagent_type":"coder"}`).
		rec(43020, "task.started", taskRec("task.started", "agent-t3", "agent-3", "ag1", "running", 43020, 0, "")).
		rec(60000, "task.terminated", taskRec("task.terminated", "agent-t3", "agent-3", "ag1", "completed", 43020, 60000, "")).
		result(60010, "ag1", "agent_id: agent-3\nactual_subagent_type: coder\nstatus: completed\n\n[summary]\ndug", false).
		stepEnd(60020, "s2", tokens(1000, 30, 9000, 0)).
		step(61000, "s3").
		text(61500, "s3", "All reviewed.").
		usage(62000, tokens(1100, 20, 9100, 0)).
		stepEnd(62010, "s3", tokens(1100, 20, 9100, 0)).
		ended(62020, "completed", "").
		rec(63000, "context.apply_compaction", `"summary":"we reviewed a, b and c","compactedCount":9`).
		rec(63001, "usage.record", `"agentId":"main","model":"kimi-k2","usage":`+tokens(500, 40, 0, 0)+`,"usageScope":"session"`).
		prompt(70000, "one more").
		step(70010, "s4").
		usage(70500, tokens(600, 10, 0, 0)).
		call(70600, "s4", "ag2", "Agent", `{"description":"hang","prompt":"never ends"}`).
		rec(70610, "task.started", taskRec("task.started", "agent-t5", "agent-5", "ag2", "running", 70610, 0, "")).
		raw(`{"type":"context.append_loop_event","event":{"type":"tool.res`)
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), main.b.String())
	child := func(id string, j *journal) { write(t, filepath.Join(dir, "agents", id, "wire.jsonl"), j.b.String()) }
	child("agent-0", newJournal("agent-0").prompt(1100, "Review a.go").step(1200, "c1").
		call(2000, "c1", "r1", "Read", `{"path":"a.go"}`).usage(2100, tokens(300, 20, 0, 0)).
		result(2200, "r1", "package a", false).stepEnd(2300, "c1", tokens(300, 20, 0, 0)).
		step(2400, "c2").text(2500, "c2", "a is fine").usage(2600, tokens(400, 30, 200, 0)).
		stepEnd(2700, "c2", tokens(400, 30, 200, 0)).ended(29000, "completed", ""))
	child("agent-1", newJournal("agent-1").prompt(1100, "Review b.go").step(1200, "c1").
		call(2000, "c1", "g1", "Grep", `{"pattern":"x"}`).usage(2100, tokens(300, 20, 0, 0)).
		result(2200, "g1", "b.go:1", false).stepEnd(2300, "c1", tokens(300, 20, 0, 0)).
		ended(39000, "failed", `{"code":"loop.max_steps_exceeded","message":"Turn exceeded maxSteps=3.","retryable":false}`))
	child("agent-2", newJournal("agent-2").prompt(1100, "Review c.go").step(1200, "c1").
		usage(2100, tokens(300, 20, 0, 0)).ended(40900, "cancelled", ""))
	child("agent-3", newJournal("agent-3").prompt(43100, "dig into a.go").step(43200, "c1").
		usage(44000, tokens(700, 50, 0, 0)).
		call(44010, "c1", "sub1", "Agent", `{"description":"nested","prompt":"check one line","subagent_type":"explore"}`).
		rec(44020, "task.started", `"agentId":"agent-3","info":{"taskId":"agent-t4","kind":"agent","agentId":"agent-4","subagentType":"explore","parentToolCallId":"sub1","status":"running","startedAt":1779256844020,"endedAt":null}`).
		rec(50000, "task.terminated", `"agentId":"agent-3","info":{"taskId":"agent-t4","kind":"agent","agentId":"agent-4","status":"completed","startedAt":1779256844020,"endedAt":1779256850000}`).
		result(50010, "sub1", "agent_id: agent-4\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\none line ok", false).
		stepEnd(50020, "c1", tokens(700, 50, 0, 0)).
		step(50100, "c2").text(50200, "c2", "dug").usage(50300, tokens(800, 10, 0, 0)).stepEnd(50400, "c2", tokens(800, 10, 0, 0)).
		ended(59000, "completed", ""))
	child("agent-4", newJournal("agent-4").prompt(44100, "check one line").step(44200, "c1").
		text(45000, "c1", "one line ok").usage(45100, tokens(200, 5, 0, 0)).ended(49000, "completed", ""))
	child("agent-5", newJournal("agent-5").prompt(70700, "never ends").step(70800, "c1").
		call(71000, "c1", "h1", "Glob", `{"pattern":"**"}`))
	write(t, filepath.Join(dir, "state.json"), `{"title":"review","createdAt":"2026-05-20T05:59:51.085Z","agents":{
		"main":{"type":"main","parentAgentId":null},
		"agent-0":{"type":"sub","parentAgentId":"main","swarmItem":"a.go"},
		"agent-1":{"type":"sub","parentAgentId":"main","swarmItem":"b.go"},
		"agent-2":{"type":"sub","parentAgentId":"main","swarmItem":"c.go"},
		"agent-3":{"type":"sub","parentAgentId":"main"},
		"agent-4":{"type":"sub","parentAgentId":"agent-3"},
		"agent-5":{"type":"sub","parentAgentId":"main"}}}`)
	return dir
}

func facts(f *importers.Fork) []string {
	var out []string
	for _, b := range f.Branches {
		out = append(out, b.Name+" @"+b.Agent+" "+string(b.Conv.Status))
	}
	return out
}

func ms(x float64) time.Time { return time.UnixMilli(int64(t0 + x)).UTC() }

func TestRead_Swarm(t *testing.T) {
	dir := swarmSession(t)
	s := readOne(t, dir, importers.Options{})
	fs := importerstest.Forks(s.Trunk)
	var got [][]string
	for _, f := range fs {
		got = append(got, facts(f))
	}
	want := [][]string{
		{"review #1 @explore ok", "review #2 @explore exhausted", "review #3 @explore cancelled"}, // one AgentSwarm call: its title and the item
		{"deep dive @explore ok"},     // serial: a one-branch fork
		{"hang @explore interrupted"}, // never finished
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("forks %q\nwant %q\n%s", got, want, importerstest.Dump(s))
	}
	sw := fs[0]
	if sw.Tool != "AgentSwarm" || !sw.At.Equal(ms(1000)) || !sw.JoinAt.Equal(ms(41000)) {
		t.Errorf("swarm fork %+v", sw)
	}
	for i, item := range []string{"a.go", "b.go", "c.go"} {
		b := sw.Branches[i]
		if b.Instructions != "Review "+item || b.CallID != "sw1" {
			t.Errorf("branch %d: instructions %q call %q", i, b.Instructions, b.CallID)
		}
	}
	if b := sw.Branches[0]; b.Answer != "a is fine" || !b.Conv.Ended.Equal(ms(30000)) || len(b.Conv.Steps) != 4 {
		t.Errorf("agent-0: %q\n%s", b.Answer, importerstest.Dump(s))
	}
	if b := sw.Branches[1]; b.Conv.Error != "Turn exceeded maxSteps=3." {
		t.Errorf("agent-1 error %q", b.Conv.Error)
	}
	// The serial call's sub-agent delegated once more: a nested fork.
	nested := importerstest.Forks(fs[1].Branches[0].Conv)
	if len(nested) != 1 || !reflect.DeepEqual(facts(nested[0]), []string{"nested @explore ok"}) || nested[0].Branches[0].Instructions != "check one line" {
		t.Errorf("nested fork:\n%s", importerstest.Dump(s))
	}
	if last := fs[2]; !last.JoinAt.IsZero() || len(last.Branches[0].Conv.Steps) != 2 {
		t.Errorf("unfinished fork:\n%s", importerstest.Dump(s))
	}
	// The compaction is a step, its call an llm node of its own.
	compacted := false
	for i, st := range s.Trunk.Steps {
		if st.Compact != nil {
			compacted = st.Compact.Summary == "we reviewed a, b and c" && s.Trunk.Steps[i+1].LLM != nil &&
				s.Trunk.Steps[i+1].LLM.Usage.In == 500 && len(s.Trunk.Steps[i+1].LLM.Calls) == 0
		}
	}
	if !compacted {
		t.Errorf("compaction:\n%s", importerstest.Dump(s))
	}
	if s.Trunk.System != "You are main." || len(s.Trunk.Tools) != 2 || s.Trunk.Tools[1].Name != "AgentSwarm" ||
		fs[0].Branches[0].Conv.System != "You are agent-0." {
		t.Errorf("system %q tools %+v", s.Trunk.System, s.Trunk.Tools)
	}
	if s.Dir != "/home/dev/proj" || s.Title != "review" || !reflect.DeepEqual(s.Tasks, []string{"review the three files", "one more"}) {
		t.Errorf("dir %q title %q tasks %q", s.Dir, s.Title, s.Tasks)
	}

	wantTot := importerstest.Totals{
		Responses: 3 + 1 + 1 + 2 + 1 + 1 + 2 + 1 + 1, // trunk steps, compaction call, last step; agent-0..5
		Tools:     1 + 1 + 1,
		SubAgents: 6,
		In:        (900 + 8000 + 50) + 10000 + 10200 + 500 + 600 + 300 + 600 + 300 + 300 + 700 + 800 + 200,
		Out:       120 + 30 + 20 + 40 + 10 + 20 + 30 + 20 + 20 + 50 + 10 + 5,
		Cached:    8000 + 9000 + 9100 + 200,
		// The swarm's three pairwise, and agent-3 with the sub-agent it ran.
		Overlapping: 4,
	}
	wantDet := importerstest.Details{CacheWrite: 50, Research: 3, Forks: 4,
		Statuses: map[string]int{"ok": 3, "exhausted": 1, "cancelled": 1, "interrupted": 1}}
	if tot, det := importerstest.Count(s), importerstest.Detail(s); tot != wantTot || !reflect.DeepEqual(det, wantDet) {
		t.Errorf("totals %+v %+v\nwant   %+v %+v", tot, det, wantTot, wantDet)
	}
	checkRaw(t, dir, s)

	if !reflect.DeepEqual(s.Report.Skipped, map[string]int{"FancyNewRecord": 1}) {
		t.Errorf("skipped %v", s.Report.Skipped)
	}
	var problems []string
	for _, p := range s.Report.Problems {
		problems = append(problems, fmt.Sprintf("%s:%d", strings.TrimPrefix(p.File, dir+string(filepath.Separator)), p.Line))
	}
	if want := []string{"agents/main/wire.jsonl:12", "agents/main/wire.jsonl:37"}; !reflect.DeepEqual(problems, want) {
		t.Errorf("problems %v, want %v\n%+v", problems, want, s.Report.Problems)
	}
	if _, err := (Format{}).Read(context.Background(), dir, importers.Options{Strict: true}); err == nil ||
		!strings.Contains(err.Error(), filepath.Join(dir, "agents", "main", "wire.jsonl")+":12") {
		t.Errorf("strict: %v", err)
	}
}

// unlinkedSession writes: a call no task or result links to a sub-agent,
// state.json's one unlinked sub-agent of main, and a sub-agent state.json
// does not list.
func unlinkedSession(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "s")
	write(t, filepath.Join(dir, "agents", "main", "wire.jsonl"), newJournal("main").
		prompt(0, "go").step(10, "s1").usage(100, tokens(10, 1, 0, 0)).
		call(200, "s1", "c1", "Agent", `{"description":"a","prompt":"do a"}`).b.String())
	write(t, filepath.Join(dir, "agents", "agent-0", "wire.jsonl"), newJournal("coder").
		prompt(300, "do a").step(310, "x").b.String())
	write(t, filepath.Join(dir, "agents", "agent-1", "wire.jsonl"), newJournal("coder").
		prompt(400, "stray").step(410, "y").text(420, "y", "hi").usage(430, tokens(5, 1, 0, 0)).ended(440, "completed", "").b.String())
	write(t, filepath.Join(dir, "state.json"), `{"agents":{"main":{"type":"main","parentAgentId":null},"agent-0":{"type":"sub","parentAgentId":"main"}}}`)
	return dir
}

// TestRead_Unlinked: with no task.started and a result that names no
// agent (an interrupted call), the call takes its agent's unlinked
// sub-agent from state.json in order, and says so; a sub-agent no call
// can take becomes a fork of its own.
func TestRead_Unlinked(t *testing.T) {
	dir := unlinkedSession(t)
	s := readOne(t, dir, importers.Options{})
	fs := importerstest.Forks(s.Trunk)
	if len(fs) != 2 || !reflect.DeepEqual(facts(fs[0]), []string{"a @coder interrupted"}) ||
		!reflect.DeepEqual(facts(fs[1]), []string{"agent-1 @coder ok"}) || fs[1].Branches[0].Instructions != "stray" {
		t.Fatalf("%s", importerstest.Dump(s))
	}
	if len(s.Report.Problems) != 2 || !strings.Contains(s.Report.Problems[0].Err, "by order") ||
		!strings.Contains(s.Report.Problems[1].Err, "no Agent call of main names this sub-agent") {
		t.Errorf("problems %+v", s.Report.Problems)
	}
}

func TestDetect(t *testing.T) {
	dir := swarmSession(t)
	for _, p := range []string{dir, filepath.Join(dir, "state.json"), filepath.Join(dir, "agents", "main", "wire.jsonl"), filepath.Join(dir, "agents", "agent-3", "wire.jsonl")} {
		if !(Format{}).Detect(p) {
			t.Errorf("Detect(%s) = false", p)
		}
	}
	// An agent's own journal names the whole session.
	if s := readOne(t, filepath.Join(dir, "agents", "agent-3", "wire.jsonl"), importers.Options{}); s.Source.ID != "sess-1" {
		t.Errorf("read from a sub-agent's journal: %+v", s.Source)
	}
	tr := importerstest.Transcripts(t)
	if !(Format{}).Detect(filepath.Join(tr, "kimi-code", "sample-main")) {
		t.Error("the real sample is not detected")
	}
	others, _ := filepath.Glob(filepath.Join(tr, "claude-code", "*.jsonl"))
	others = append(others, filepath.Join(tr, "kimi-cli", "with-tool-calls"), filepath.Join(tr, "kimi-cli", "with-tool-calls", "wire.jsonl"), t.TempDir())
	for _, p := range others {
		if (Format{}).Detect(p) {
			t.Errorf("Detect(%s) = true for another format", p)
		}
	}
}

// TestWorkDirKey: the keys Kimi Code's own encodeWorkDirKey gives
// (computed with its TypeScript source under Node).
func TestWorkDirKey(t *testing.T) {
	for dir, want := range map[string]string{
		"/home/u/My Project (v2)":              "wd_my-project-v2_b825a0a3e691",
		"/tmp/work":                            "wd_work_f9be197a95b0",
		"/srv/日本語 dir":                         "wd_dir_3dafc950b3ba",
		"/a/--x--/":                            "wd_x_b8a4dd3742a5",
		"/x/" + strings.Repeat("A", 50) + "-b": "wd_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa_bc3133bed8ca",
	} {
		if got := WorkDirKey(dir); got != want {
			t.Errorf("WorkDirKey(%q) = %s, want %s", dir, got, want)
		}
	}
}

func TestNewest(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"KIMI_CODE_HOME": home, "HOME": "/nonexistent"}
	getenv := func(k string) string { return env[k] }
	work := filepath.Join(t.TempDir(), "proj")
	write(t, filepath.Join(work, "AGENTS.md"), "# rules\n")
	write(t, filepath.Join(work, ".kimi-code", "agents", "reviewer.md"), "---\nname: reviewer\n---\nReview.\n")
	if _, err := (Format{}).Newest(work, getenv); err == nil || !strings.Contains(err.Error(), "KIMI_CODE_HOME") {
		t.Fatalf("no session yet: %v", err)
	}
	one := newJournal("main").prompt(0, "hi").b.String()
	bucket := filepath.Join(home, "sessions", WorkDirKey(work))
	write(t, filepath.Join(bucket, "old", "agents", "main", "wire.jsonl"), one)
	// A session the index lists for this folder under another bucket name.
	other := filepath.Join(home, "sessions", "wd_legacy_000000000000", "indexed")
	write(t, filepath.Join(other, "agents", "main", "wire.jsonl"), strings.Replace(one, `"cwd":"/home/dev/proj"`, fmt.Sprintf(`"cwd":%q`, work), 1))
	write(t, filepath.Join(home, "session_index.jsonl"), fmt.Sprintf(`{"sessionId":"indexed","sessionDir":%q,"workDir":%q}`+"\n", other, work))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(bucket, "old", "agents", "main", "wire.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	got, err := (Format{}).Newest(work, getenv)
	if err != nil || got != other {
		t.Fatalf("Newest = %q, %v", got, err)
	}
	s := readOne(t, got, importers.Options{Here: work}) // imported in the folder it was found for
	var paths []string
	for _, f := range s.Project.Files {
		paths = append(paths, f.Path)
	}
	if s.Dir != work || !reflect.DeepEqual(paths, []string{".kimi-code/agents/reviewer.md", "AGENTS.md"}) {
		t.Errorf("dir %q files %v", s.Dir, paths)
	}
}
