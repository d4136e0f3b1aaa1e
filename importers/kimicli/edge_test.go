package kimicli

import (
	"context"
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

// Hand-written sessions for what the real samples do not show. Times are
// seconds after t0.
const t0 = 1774000000.0

type journal struct{ b strings.Builder }

func newJournal() *journal {
	j := &journal{}
	j.b.WriteString(`{"type": "metadata", "protocol_version": "1.10"}` + "\n")
	return j
}

func (j *journal) ev(at float64, typ, payload string) *journal {
	fmt.Fprintf(&j.b, `{"timestamp": %.6f, "message": {"type": %q, "payload": %s}}`+"\n", t0+at, typ, payload)
	return j
}

func (j *journal) raw(line string) *journal { j.b.WriteString(line); return j }

func usage(other, out, read, creation int) string {
	return fmt.Sprintf(`{"token_usage": {"input_other": %d, "output": %d, "input_cache_read": %d, "input_cache_creation": %d}, "message_id": "m-%d-%d"}`, other, out, read, creation, other, out)
}

func agentCall(id, args string) string {
	return fmt.Sprintf(`{"type": "function", "id": %q, "function": {"name": "Agent", "arguments": %q}}`, id, args)
}

func result(id, output string, isError bool, message, brief string) string {
	display := "[]"
	if brief != "" {
		display = fmt.Sprintf(`[{"type": "brief", "text": %q}]`, brief)
	}
	return fmt.Sprintf(`{"tool_call_id": %q, "return_value": {"is_error": %v, "output": %q, "message": %q, "display": %s}}`, id, isError, output, message, display)
}

func wrapped(call, agent, typ, payload string) string {
	return fmt.Sprintf(`{"parent_tool_call_id": %q, "agent_id": %q, "subagent_type": "explore", "event": {"type": %q, "payload": %s}}`, call, agent, typ, payload)
}

func completed(agent, summary string) string {
	return "agent_id: " + agent + "\nresumed: false\nactual_subagent_type: explore\nstatus: completed\n\n[summary]\n" + summary
}

func write(t testing.TB, path, content string) {
	t.Helper()
	importerstest.Write(t, filepath.Dir(path), filepath.Base(path), content)
}

func metaJSON(id, status string, updated float64) string {
	return fmt.Sprintf(`{"agent_id": %q, "subagent_type": "explore", "status": %q, "description": "d", "created_at": %f, "updated_at": %f, "last_task_id": null, "launch_spec": {"agent_id": %q, "subagent_type": "explore", "model_override": null, "effective_model": "kimi-k2-turbo", "created_at": %f}}`,
		id, status, t0, t0+updated, id, t0)
}

// fanoutSession writes a session with: three parallel Agent calls in one
// step (one completed, one stopped by its step limit, one completed),
// whose forwarded events repeat usage the sub-agents' own journals hold; a
// serial call resuming the first sub-agent; a background agent completed
// by a notification; a final call whose sub-agent never finished; a
// sub-agent folder no call names; an unknown record type twice; a broken
// line; and a last line cut short.
func fanoutSession(t testing.TB) string {
	dir := filepath.Join(t.TempDir(), "session-1")
	trunk := newJournal().
		ev(0, "TurnBegin", `{"user_input": [{"type": "text", "text": "check the three services"}]}`).
		ev(0.1, "StepBegin", `{"n": 1}`).
		ev(1, "ContentPart", `{"type": "think", "think": "three at once", "encrypted": null}`).
		ev(1.1, "ContentPart", `{"type": "text", "text": "Starting three agents."}`).
		ev(2, "ToolCall", agentCall("call_A", `{"description": "auth", "prompt": "check auth", "subagent_type": "explore"}`)).
		ev(2.1, "ToolCall", agentCall("call_B", `{"description": "billing", "prompt": "ch`)).
		ev(2.2, "SubagentEvent", wrapped("call_A", "aaaa1111", "StepBegin", `{"n": 1}`)).
		ev(2.3, "ToolCallPart", `{"arguments_part": "eck billing\"}"}`).
		ev(2.4, "ToolCall", agentCall("call_C", `{"description": "search", "prompt": "check search"}`)).
		ev(2.5, "StatusUpdate", usage(1562, 240, 10240, 100)).
		ev(2.6, "SubagentEvent", wrapped("call_A", "aaaa1111", "StatusUpdate", usage(500, 100, 0, 0))).
		ev(3, "SubagentEvent", wrapped("call_B", "bbbb2222", "StepBegin", `{"n": 1}`)).
		ev(3.5, "FancyNewEvent", `{}`).
		raw(`{"timestamp": 1774000004.0, "message": `+"\n").
		ev(30, "ToolResult", result("call_A", completed("aaaa1111", "auth ok"), false, "", "")).
		ev(40, "ToolResult", result("call_B", "", true, "Max steps 3 reached when running agent. Please try splitting the task into smaller subtasks.", "Max steps reached")).
		ev(50, "ToolResult", result("call_C", completed("cccc3333", "search ok"), false, "", "")).
		ev(51, "StepBegin", `{"n": 2}`).
		ev(52, "ToolCall", agentCall("call_D", `{"description": "follow up", "prompt": "go on", "resume": "aaaa1111"}`)).
		ev(52.2, "StatusUpdate", usage(2000, 50, 12000, 0)).
		ev(70, "ToolResult", result("call_D", strings.Replace(completed("aaaa1111", "more"), "resumed: false", "resumed: true", 1), false, "", "")).
		ev(71, "StepBegin", `{"n": 3}`).
		ev(72, "ToolCall", agentCall("call_E", `{"description": "watch", "prompt": "watch the queue", "run_in_background": true}`)).
		ev(72.5, "StatusUpdate", usage(2100, 40, 12100, 0)).
		ev(73, "ToolResult", result("call_E", "task_id: agent-eeee\nkind: agent\nstatus: running\ndescription: watch\nagent_id: eeee5555\nactual_subagent_type: explore\nautomatic_notification: true", false, "Background task started.", "")).
		ev(74, "StepBegin", `{"n": 4}`).
		ev(74.5, "ContentPart", `{"type": "text", "text": "Waiting for the watcher."}`).
		ev(75, "StatusUpdate", usage(2200, 30, 12200, 0)).
		ev(76, "TurnEnd", `{}`).
		ev(90, "Notification", `{"id": "n1", "category": "task", "type": "task.completed", "source_kind": "background_task", "source_id": "agent-eeee", "title": "t", "body": "b", "severity": "info", "created_at": 1774000090.0, "payload": {"task_id": "agent-eeee", "status": "completed", "timed_out": false, "failure_reason": null, "finished_at": 1774000089.0}}`).
		ev(91, "TurnBegin", `{"user_input": "one more"}`).
		ev(91.1, "StepBegin", `{"n": 1}`).
		ev(92, "ToolCall", agentCall("call_F", `{"description": "hang", "prompt": "never ends"}`)).
		ev(92.5, "StatusUpdate", usage(2300, 20, 12300, 0)).
		ev(93, "FancyNewEvent", `{}`).
		ev(93.5, "SubagentEvent", wrapped("call_F", "ffff6666", "TurnBegin", `{"user_input": "never ends"}`)).
		raw(`{"timestamp": 1774000100.0, "message": {"type": "Status`)
	write(t, filepath.Join(dir, "wire.jsonl"), trunk.b.String())
	write(t, filepath.Join(dir, "state.json"), `{"version": 1, "custom_title": "three services"}`)

	sub := func(id, content, status string, updated float64) {
		write(t, filepath.Join(dir, "subagents", id, "wire.jsonl"), content)
		write(t, filepath.Join(dir, "subagents", id, "meta.json"), metaJSON(id, status, updated))
		write(t, filepath.Join(dir, "subagents", id, "prompt.txt"), "prompt of "+id)
		write(t, filepath.Join(dir, "subagents", id, "output"), "[stage] runner_started\n")
	}
	sub("aaaa1111", newJournal().
		ev(2.2, "TurnBegin", `{"user_input": "check auth"}`).
		ev(2.2, "StepBegin", `{"n": 1}`).
		ev(3, "ToolCall", `{"type": "function", "id": "r1", "function": {"name": "ReadFile", "arguments": "{\"path\": \"auth.py\"}"}}`).
		ev(3.1, "StatusUpdate", usage(500, 100, 0, 0)).
		ev(4, "ToolResult", result("r1", "def login(): ...", false, "", "")).
		ev(4.1, "StepBegin", `{"n": 2}`).
		ev(5, "ContentPart", `{"type": "text", "text": "auth ok"}`).
		ev(5.1, "StatusUpdate", usage(600, 80, 400, 0)).
		ev(29.9, "TurnEnd", `{}`).
		ev(52.5, "TurnBegin", `{"user_input": "go on"}`).
		ev(52.6, "StepBegin", `{"n": 1}`).
		ev(53, "ContentPart", `{"type": "text", "text": "more"}`).
		ev(53.1, "StatusUpdate", usage(700, 60, 500, 0)).
		ev(69, "TurnEnd", `{}`).b.String(), "idle", 69)
	sub("bbbb2222", newJournal().
		ev(3, "TurnBegin", `{"user_input": "check billing"}`).
		ev(3, "StepBegin", `{"n": 1}`).
		ev(4, "ToolCall", `{"type": "function", "id": "g1", "function": {"name": "Grep", "arguments": "{\"pattern\": \"invoice\"}"}}`).
		ev(4.1, "StatusUpdate", usage(300, 20, 0, 0)).
		ev(5, "ToolResult", result("g1", "billing.py:3: invoice", false, "", "")).
		ev(5.1, "StepBegin", `{"n": 2}`).
		ev(6, "ToolCall", `{"type": "function", "id": "g2", "function": {"name": "Grep", "arguments": "{\"pattern\": \"refund\"}"}}`).
		ev(6.1, "StatusUpdate", usage(300, 20, 0, 0)).
		ev(7, "ToolResult", result("g2", "", false, "", "")).b.String(), "failed", 39)
	sub("cccc3333", newJournal().
		ev(2.5, "TurnBegin", `{"user_input": "check search"}`).
		ev(2.5, "StepBegin", `{"n": 1}`).
		ev(10, "ContentPart", `{"type": "text", "text": "search ok"}`).
		ev(10.1, "StatusUpdate", usage(400, 50, 0, 0)).
		ev(49, "TurnEnd", `{}`).b.String(), "idle", 49)
	sub("eeee5555", newJournal().
		ev(73.5, "TurnBegin", `{"user_input": "watch the queue"}`).
		ev(73.5, "StepBegin", `{"n": 1}`).
		ev(80, "ContentPart", `{"type": "text", "text": "queue is fine"}`).
		ev(80.1, "StatusUpdate", usage(800, 90, 0, 0)).
		ev(89, "TurnEnd", `{}`).b.String(), "idle", 89)
	write(t, filepath.Join(dir, "tasks", "agent-eeee", "runtime.json"), `{"status": "completed", "finished_at": 1774000089.0}`)
	sub("ffff6666", newJournal().
		ev(93.5, "TurnBegin", `{"user_input": "never ends"}`).
		ev(93.5, "StepBegin", `{"n": 1}`).
		ev(94, "ToolCall", `{"type": "function", "id": "h1", "function": {"name": "Grep", "arguments": "{\"pattern\": \"x\"}"}}`).b.String(), "running_foreground", 94)
	sub("zzzz9999", newJournal().
		ev(60, "TurnBegin", `{"user_input": "left over"}`).
		ev(60, "StepBegin", `{"n": 1}`).
		ev(61, "ContentPart", `{"type": "text", "text": "done"}`).
		ev(61.1, "StatusUpdate", usage(100, 10, 0, 0)).
		ev(62, "TurnEnd", `{}`).b.String(), "idle", 62)
	return dir
}

func at(sec float64) time.Time {
	return time.Unix(int64(t0), 0).UTC().Add(time.Duration(sec * float64(time.Second)))
}

func near(a, b time.Time) bool { d := a.Sub(b); return d > -time.Millisecond && d < time.Millisecond }

func branchFacts(f *importers.Fork) []string {
	var out []string
	for _, b := range f.Branches {
		out = append(out, b.Name+" "+string(b.Conv.Status))
	}
	return out
}

func TestRead_Fanout(t *testing.T) {
	dir := fanoutSession(t)
	s := readOne(t, dir, importers.Options{})
	fs := importerstest.Forks(s.Trunk)
	got := [][]string{}
	for _, f := range fs {
		got = append(got, branchFacts(f))
	}
	want := [][]string{
		{"auth ok", "billing exhausted", "search ok"}, // one step, one fork: the calls' titles
		{"follow up ok"},     // the resumed sub-agent (aaaa1111), by its call's title: a serial one-branch fork
		{"d ok"},             // no call names it: a fork of its own where it started, by its meta.json title
		{"watch ok"},         // background, completed by the notification
		{"hang interrupted"}, // never finished
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("forks %q, want %q\n%s", got, want, importerstest.Dump(s))
	}
	// The first fork: calls in order, arguments joined across the
	// ToolCallPart, the join at the last result, windows overlapping.
	f := fs[0]
	if f.Branches[1].Instructions != "check billing" || f.Branches[0].Instructions != "check auth" ||
		f.Branches[2].Instructions != "check search" {
		t.Errorf("instructions %q %q %q", f.Branches[0].Instructions, f.Branches[1].Instructions, f.Branches[2].Instructions)
	}
	if !near(f.At, at(2)) || !near(f.JoinAt, at(50)) {
		t.Errorf("fork at %v join %v", f.At, f.JoinAt)
	}
	if b := f.Branches[1]; b.Agent != "explore" || !strings.Contains(b.Conv.Error, "Max steps 3 reached") {
		t.Errorf("exhausted branch: %+v %+v", b, b.Conv)
	}
	if b := f.Branches[0]; b.Answer != "auth ok" || len(b.Conv.Steps) != 4 || !near(b.Conv.Ended, at(30)) ||
		b.Args != `{"description": "auth", "prompt": "check auth", "subagent_type": "explore"}` {
		t.Errorf("first run of aaaa1111 (its first turn only): answer %q\n%s", b.Answer, importerstest.Dump(s))
	}
	if b := fs[1].Branches[0]; b.Answer != "more" || len(b.Conv.Steps) != 2 || b.Conv.Steps[0].LLM.Content != "more" {
		t.Errorf("resumed run of aaaa1111 (its second turn only):\n%s", importerstest.Dump(s))
	}
	if f := fs[3]; !near(f.JoinAt, at(89)) || f.Branches[0].Answer != "" || f.Branches[0].Instructions != "watch the queue" {
		t.Errorf("background fork: join %v", f.JoinAt)
	}
	if f := fs[4]; !f.JoinAt.IsZero() || !f.Branches[0].Conv.Ended.IsZero() {
		t.Errorf("an unfinished branch has no end and its fork no join")
	}
	// The branch models come from meta.json.
	for _, st := range fs[0].Branches[0].Conv.Steps {
		if st.LLM != nil && st.LLM.Model != "kimi-k2-turbo" {
			t.Errorf("branch model %q", st.LLM.Model)
		}
	}
	if !reflect.DeepEqual(s.Models, []string{"kimi-k2-turbo"}) {
		t.Errorf("models %v", s.Models)
	}

	// Totals: the forwarded StatusUpdate of aaaa1111 is not counted twice.
	wantTot := importerstest.Totals{
		Responses: 5 + 3 + 2 + 1 + 1 + 1 + 1, // trunk, aaaa (both runs), bbbb, cccc, eeee, ffff, zzzz
		Tools:     1 + 2 + 1,                 // ReadFile, two Grep, the unfinished Grep
		SubAgents: 7,
		In:        (1562 + 10240 + 100) + 14000 + 14200 + 14400 + 14600 + 500 + 1000 + 1200 + 300 + 300 + 400 + 800 + 100,
		Out:       240 + 50 + 40 + 30 + 20 + 100 + 80 + 60 + 20 + 20 + 50 + 90 + 10,
		Cached:    10240 + 12000 + 12100 + 12200 + 12300 + 400 + 500,
		// The three parallel calls pairwise, and the resumed call with the
		// orphan sub-agent that ran meanwhile.
		Overlapping: 4,
	}
	wantDet := importerstest.Details{CacheWrite: 100, Research: 4, Forks: 5,
		Statuses: map[string]int{"ok": 5, "exhausted": 1, "interrupted": 1}}
	if tot, det := importerstest.Count(s), importerstest.Detail(s); tot != wantTot || !reflect.DeepEqual(det, wantDet) {
		t.Errorf("totals %+v %+v\nwant   %+v %+v", tot, det, wantTot, wantDet)
	}
	checkRaw(t, dir, s)

	// What was skipped or could not be read, with file:line.
	if !reflect.DeepEqual(s.Report.Skipped, map[string]int{"FancyNewEvent": 2}) {
		t.Errorf("skipped %v", s.Report.Skipped)
	}
	wire := filepath.Join(dir, "wire.jsonl")
	var problems []string
	for _, p := range s.Report.Problems {
		problems = append(problems, fmt.Sprintf("%s:%d", strings.TrimPrefix(p.File, dir+string(filepath.Separator)), p.Line))
	}
	wantProblems := []string{"wire.jsonl:15", "wire.jsonl:38", "subagents/zzzz9999/wire.jsonl:0"}
	if !reflect.DeepEqual(problems, wantProblems) {
		t.Errorf("problems %v, want %v\n%+v", problems, wantProblems, s.Report.Problems)
	}

	// Strict: the broken line fails the import and says where; the cut
	// last line alone would not.
	if _, err := (Format{}).Read(context.Background(), dir, importers.Options{Strict: true}); err == nil || !strings.Contains(err.Error(), wire+":15") {
		t.Errorf("strict: %v", err)
	}
	if s.Title != "three services" || !reflect.DeepEqual(s.Tasks, []string{"check the three services", "one more"}) {
		t.Errorf("title %q tasks %q", s.Title, s.Tasks)
	}
	if !s.Ended.IsZero() {
		t.Error("the last turn never ended: the session is still open")
	}
	_ = record.StatusOK
}

// missingSubagentSession writes a session whose one Agent call names a
// sub-agent with no folder and no forwarded events.
func missingSubagentSession(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "s")
	write(t, filepath.Join(dir, "wire.jsonl"), newJournal().
		ev(0, "TurnBegin", `{"user_input": "go"}`).
		ev(0, "StepBegin", `{"n": 1}`).
		ev(1, "ToolCall", agentCall("c1", `{"description": "a", "prompt": "do a"}`)).
		ev(2, "ToolResult", result("c1", completed("a0000001", "done"), false, "", "")).
		ev(3, "TurnEnd", `{}`).b.String())
	return dir
}

// TestRead_MissingSubagent: a call whose result names a sub-agent whose
// folder is gone and whose events were not forwarded is a branch with no
// steps, still ok as its result says, with a note naming the missing file.
func TestRead_MissingSubagent(t *testing.T) {
	dir := missingSubagentSession(t)
	s := readOne(t, dir, importers.Options{})
	fs := importerstest.Forks(s.Trunk)
	if len(fs) != 1 || len(fs[0].Branches) != 1 {
		t.Fatalf("%s", importerstest.Dump(s))
	}
	b := fs[0].Branches[0]
	if b.Name != "a" || b.ID != "a0000001" || b.Conv.Status != record.StatusOK || len(b.Conv.Steps) != 0 || b.Answer != "done" {
		t.Errorf("branch %+v %+v", b, b.Conv)
	}
	if len(s.Report.Problems) != 1 || !strings.HasSuffix(s.Report.Problems[0].File, filepath.Join("subagents", "a0000001", "wire.jsonl")) {
		t.Errorf("problems %+v", s.Report.Problems)
	}
}

func TestDetect(t *testing.T) {
	dir := fanoutSession(t)
	for _, p := range []string{dir, filepath.Join(dir, "wire.jsonl"), filepath.Join(dir, "state.json")} {
		if !(Format{}).Detect(p) {
			t.Errorf("Detect(%s) = false", p)
		}
	}
	tr := importerstest.Transcripts(t)
	for _, p := range []string{"kimi-cli/with-tool-calls", "kimi-cli/with-subagent-collapsed", "kimi-cli/with-tool-calls/wire.jsonl"} {
		if !(Format{}).Detect(filepath.Join(tr, p)) {
			t.Errorf("Detect(%s) = false", p)
		}
	}
	others, _ := filepath.Glob(filepath.Join(tr, "claude-code", "*.jsonl"))
	others = append(others, filepath.Join(tr, "kimi-code", "sample-main"), filepath.Join(tr, "kimi-code", "sample-main", "agents", "main", "wire.jsonl"), t.TempDir())
	for _, p := range others {
		if (Format{}).Detect(p) {
			t.Errorf("Detect(%s) = true for another format", p)
		}
	}
	if _, err := (Format{}).Read(context.Background(), t.TempDir(), importers.Options{}); err == nil || !strings.Contains(err.Error(), "has no wire.jsonl") {
		t.Errorf("an empty folder: %v", err)
	}
}

// TestNewest finds the newest session of a working folder under
// KIMI_SHARE_DIR, and the session's working folder and AGENTS.md files
// through kimi.json.
func TestNewest(t *testing.T) {
	share := t.TempDir()
	env := map[string]string{"KIMI_SHARE_DIR": share, "HOME": "/nonexistent"}
	getenv := func(k string) string { return env[k] }
	work := filepath.Join(t.TempDir(), "proj")
	write(t, filepath.Join(work, "AGENTS.md"), "# house rules\n")
	write(t, filepath.Join(work, ".kimi", "AGENTS.md"), "# kimi rules\n")
	if _, err := (Format{}).Newest(work, getenv); err == nil || !strings.Contains(err.Error(), "KIMI_SHARE_DIR") {
		t.Fatalf("no session yet: %v", err)
	}
	bucket := filepath.Join(share, "sessions", WorkDirKey(work))
	one := newJournal().ev(0, "TurnBegin", `{"user_input": "hi"}`).b.String()
	write(t, filepath.Join(bucket, "old", "wire.jsonl"), one)
	write(t, filepath.Join(bucket, "new", "wire.jsonl"), one)
	write(t, filepath.Join(share, "sessions", WorkDirKey(filepath.Join(work, "other")), "elsewhere", "wire.jsonl"), one)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(bucket, "old", "wire.jsonl"), old, old); err != nil {
		t.Fatal(err)
	}
	got, err := (Format{}).Newest(work, getenv)
	if err != nil || got != filepath.Join(bucket, "new") {
		t.Fatalf("Newest = %q, %v", got, err)
	}
	write(t, filepath.Join(share, "kimi.json"), fmt.Sprintf(`{"work_dirs": [{"path": %q, "kaos": "local", "last_session_id": "new"}]}`, work))
	s := readOne(t, got, importers.Options{Here: work}) // imported in the folder it was found for
	if s.Dir != work || s.Project.Name != "proj" || len(s.Project.Files) != 2 ||
		s.Project.Files[0].Path != ".kimi/AGENTS.md" || s.Project.Files[1].Path != "AGENTS.md" || s.Project.Files[1].Content != "# house rules\n" {
		t.Errorf("dir %q project %+v", s.Dir, s.Project)
	}
	// Without KIMI_SHARE_DIR the folder is ~/.kimi.
	delete(env, "KIMI_SHARE_DIR")
	if _, err := (Format{}).Newest(work, getenv); err == nil || !strings.Contains(err.Error(), filepath.Join("/nonexistent", ".kimi", "sessions")) {
		t.Errorf("HOME's folder: %v", err)
	}
	// The key is Kimi CLI's: the MD5 of the path (checked against the
	// bucket names of its own multi-workdir test fixture).
	if WorkDirKey("/proj-a") != "73d3cf4d1cf337adf57d6732b8be2205" || WorkDirKey("/proj-b/") != "dbf62706c1b976e79a5e7cfcc3491a1f" {
		t.Errorf("WorkDirKey(/proj-a) = %s", WorkDirKey("/proj-a"))
	}
}
