package claudecode_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// lines writes Claude Code records as the 2.1.x CLI does (one JSON object
// a line, ISO times), for sessions built in tests.
type lines struct {
	t       *testing.T
	session string
	agent   string // set on sidechain lines
	cwd     string // the working folder the lines name; default /nonexistent/app
	n       int
	out     []string
}

var base = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func (l *lines) env(typ string, sec float64) map[string]any {
	l.n++
	m := map[string]any{"type": typ, "uuid": fmt.Sprintf("%s-%s-%d", l.session, l.agent, l.n), "sessionId": l.session,
		"timestamp": base.Add(time.Duration(sec * float64(time.Second))).Format("2006-01-02T15:04:05.000Z"),
		"cwd":       "/nonexistent/app", "version": "2.1.40", "isSidechain": l.agent != ""}
	if l.agent != "" {
		m["agentId"] = l.agent
	}
	if l.cwd != "" {
		m["cwd"] = l.cwd
	}
	return m
}

func (l *lines) put(m map[string]any) {
	b, err := json.Marshal(m)
	if err != nil {
		l.t.Fatal(err)
	}
	l.out = append(l.out, string(b))
}

func (l *lines) user(sec float64, text string) {
	m := l.env("user", sec)
	m["message"] = map[string]any{"role": "user", "content": text}
	l.put(m)
}

// asst writes one response, one line per block, each repeating the usage
// (a streaming snapshot of 1 output token until the last line).
func (l *lines) asst(sec float64, id string, in, read, write, out int64, blocks ...map[string]any) {
	for i, b := range blocks {
		m := l.env("assistant", sec+float64(i)*0.1)
		o := int64(1)
		if i == len(blocks)-1 {
			o = out
		}
		m["requestId"] = "req_" + id
		m["message"] = map[string]any{"id": id, "role": "assistant", "model": "claude-test", "content": []any{b},
			"usage": map[string]any{"input_tokens": in, "cache_read_input_tokens": read, "cache_creation_input_tokens": write, "output_tokens": o}}
		l.put(m)
	}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func use(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func task(id, desc, prompt, typ string) map[string]any {
	in := map[string]any{"description": desc, "prompt": prompt}
	if typ != "" {
		in["subagent_type"] = typ
	}
	return use(id, "Task", in)
}

func (l *lines) result(sec float64, toolID, content string, isError bool, tur map[string]any) {
	m := l.env("user", sec)
	m["message"] = map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": toolID, "content": content, "is_error": isError}}}
	if tur != nil {
		m["toolUseResult"] = tur
	}
	l.put(m)
}

func (l *lines) raw(s string) { l.out = append(l.out, s) }

func (l *lines) write(path string, terminated bool) {
	l.t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		l.t.Fatal(err)
	}
	s := strings.Join(l.out, "\n")
	if terminated {
		s += "\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// layout writes a session that uses every way Claude Code links a
// sub-agent, and every kind of bad input the importer tolerates; it
// returns the session file's path.
func layout(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "projects", "-nonexistent-app")
	S := "sess-1"
	m := &lines{t: t, session: S}
	m.raw(`{"type":"file-history-snapshot","messageId":"x","snapshot":{},"isSnapshotUpdate":false}`)
	m.user(0, "compare a, b, c")
	m.asst(1, "msg1", 10, 100, 20, 50, text("delegating"), task("t1", "alpha", "do a", "Explore"), task("t2", "beta", "do b", ""))
	m.result(10, "t1", "a done", false, map[string]any{"status": "completed", "agentId": "a1"})
	dup := m.out[len(m.out)-1]
	m.raw(dup) // a resumed session repeats a line
	m.result(12, "t2", "Agent failed: boom", true, map[string]any{"status": "failed", "agentId": "a2"})
	m.asst(13, "msg2", 10, 200, 0, 30, task("t3", "gamma", "do c", "Explore"))
	m.result(20, "t3", "c done", false, map[string]any{"status": "completed", "agentId": "a3"}) // its file is missing
	m.asst(21, "msg3", 10, 300, 0, 30, task("t4", "delta", "do d", ""))
	m.result(25, "t4", "d done", false, map[string]any{"status": "completed", "agentId": "a4"}) // legacy file beside the session
	m.asst(26, "msg4", 10, 400, 0, 30, task("t5", "eps", "inline task", ""))
	side := &lines{t: t, session: S, agent: "a5"} // an inline sidechain
	side.user(26.5, "inline task")
	side.asst(27, "msg5", 5, 0, 0, 7, text("inline done"))
	m.out = append(m.out, side.out...)
	m.raw(`{"type":"weird-thing","sessionId":"sess-1"}`)
	m.raw(`{not json`)
	m.result(28, "t5", "inline done\nagentId: a5 (for resuming)", false, nil)
	cb := m.env("system", 29)
	cb["subtype"] = "compact_boundary"
	m.put(cb)
	sum := m.env("user", 30)
	sum["isCompactSummary"] = true
	sum["message"] = map[string]any{"role": "user", "content": "summary text"}
	m.put(sum)
	m.asst(31, "msg6", 10, 500, 0, 40, text("final answer"))
	m.raw(`{"type":"user","message":{"role":"us`) // the line being written
	m.write(filepath.Join(dir, S+".jsonl"), false)

	subs := filepath.Join(dir, S, "subagents")
	a1 := &lines{t: t, session: S, agent: "a1"}
	a1.user(1.1, "do a")
	a1.asst(2, "msgA1", 3, 0, 1000, 9, use("r1", "Read", map[string]any{"file_path": "a.md"}))
	a1.result(3, "r1", "alpha", false, nil)
	a1.asst(4, "msgA2", 3, 1000, 10, 9, task("n1", "nested", "deeper", "Plan"))
	a1.result(8, "n1", "deep done", false, map[string]any{"status": "completed"}) // linked through agent_progress
	a1.asst(9, "msgA3", 3, 1010, 10, 20, text("a done"))
	p := a1.env("progress", 4.2)
	p["parentToolUseID"] = "n1"
	p["data"] = map[string]any{"type": "agent_progress", "agentId": "a6"}
	a1.put(p)
	a1.write(filepath.Join(subs, "agent-a1.jsonl"), true)
	if err := os.WriteFile(filepath.Join(subs, "agent-a1.meta.json"), []byte(`{"agentType":"Explore","description":"alpha","toolUseId":"t1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	a6 := &lines{t: t, session: S, agent: "a6"}
	a6.user(4.1, "deeper")
	a6.asst(7, "msgN1", 2, 0, 0, 5, text("deep done"))
	a6.write(filepath.Join(subs, "agent-a6.jsonl"), true)
	a2 := &lines{t: t, session: S, agent: "a2"}
	a2.user(1.2, "do b")
	a2.asst(2, "msgB1", 4, 0, 0, 6, use("g1", "Grep", map[string]any{"pattern": "b"}))
	a2.result(11, "g1", "b", false, nil)
	a2.write(filepath.Join(subs, "agent-a2.jsonl"), true)
	c := &lines{t: t, session: S, agent: "acompact-1"}
	c.user(29.1, "summarise the conversation")
	c.asst(29.5, "msgC", 100, 400, 0, 60, text("summary text"))
	c.write(filepath.Join(subs, "agent-acompact-1.jsonl"), true)
	ps := &lines{t: t, session: S, agent: "aprompt_suggestion-1"}
	ps.user(31.5, "suggest")
	ps.write(filepath.Join(subs, "agent-aprompt_suggestion-1.jsonl"), true)
	a4 := &lines{t: t, session: S, agent: "a4"}
	a4.user(21.1, "do d")
	a4.asst(24, "msgD", 2, 0, 0, 3, text("d done"))
	a4.write(filepath.Join(dir, "agent-a4.jsonl"), true)
	return filepath.Join(dir, S+".jsonl")
}

func TestLayouts(t *testing.T) {
	path := layout(t)
	if !(claudecode.Format{}).Detect(path) {
		t.Fatal("Detect = false")
	}
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := importers.Import(ctx, db, claudecode.Format{}, path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Report.Skipped["weird-thing"] != 1 || r.Report.Skipped["internal agent (prompt suggestion)"] != 1 || len(r.Report.Skipped) != 2 {
		t.Errorf("skipped %v", r.Report.Skipped)
	}
	if len(r.Report.Problems) != 1 || r.Report.Problems[0].Line != 17 || r.Report.Problems[0].File != path {
		t.Errorf("problems %+v", r.Report.Problems)
	}
	g, err := graph.Load(ctx, db, r.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var forks []string
	for _, f := range g.Forks {
		var bs []string
		for _, b := range f.Branches {
			bs = append(bs, fmt.Sprintf("%s@%s=%s/%d", b.Conv.Path, b.Agent, b.Status, len(b.Conv.Nodes)))
		}
		forks = append(forks, fmt.Sprintf("n%d %s", f.Node.Seq, strings.Join(bs, " ")))
	}
	want := []string{
		"n3 alpha@Explore=ok/7 beta@general-purpose=error/3",
		"n7 alpha/nested@Plan=ok/2",
		"n18 gamma@Explore=ok/1", // no transcript: what the parent recorded (completed, its answer)
		"n22 delta@general-purpose=ok/2",
		"n27 eps@general-purpose=ok/2",
	}
	if strings.Join(forks, "\n") != strings.Join(want, "\n") {
		t.Errorf("forks:\n%s\nwant:\n%s\nnodes:\n%s", strings.Join(forks, "\n"), strings.Join(want, "\n"), shape(g))
	}
	// A sub-agent whose transcript is missing is what its parent recorded:
	// completed with its answer, from the call to the result.
	if b := g.Forks[2].Branches[0]; b.Conv.Nodes[0].Text != "c done" || !b.Conv.Nodes[0].Started.Equal(g.Forks[2].Join.Started) ||
		b.Duration != g.Forks[2].Join.Started.Sub(g.Forks[2].Node.Started) {
		t.Errorf("missing sub-agent: %+v, duration %v", b.Conv.Nodes[0].Node, b.Duration)
	}
	if b := g.Forks[0].Branches[1]; !strings.Contains(b.Answer, "boom") {
		t.Errorf("failed branch answer %q", b.Answer)
	}
	// Every response once, its usage from its last line; the compaction
	// call is the trunk's, marked as agent compaction.
	var llm int
	var in, out int64
	var compaction *graph.Node
	for _, n := range g.Nodes {
		if n.Kind == record.KindLLM {
			llm++
			in += n.LLM.Usage.In
			out += n.LLM.Usage.Out
			if n.Agent == "compaction" {
				compaction = n
			}
		}
	}
	// msg1..msg4 and msg6 (5), msgA1..A3 (3), msgN1, msgB1, msgC, msgD, msg5
	if llm != 13 || out != 50+30+30+30+40+9+9+20+5+6+60+3+7 || in != 130+210+310+410+510+1003+1013+1023+2+4+500+2+5 {
		t.Errorf("%d llm nodes, in %d out %d", llm, in, out)
	}
	if compaction == nil || compaction.Branch != "" || g.Node(compaction.Seq+1).Kind != record.KindLLM {
		t.Fatalf("compaction node %+v", compaction)
	}
	last := g.Nodes[len(g.Nodes)-1]
	if last.Kind != record.KindFinal || last.Text != "final answer" || g.Status != record.StatusOK {
		t.Errorf("last node %s %q, run %s", last.Kind, last.Text, g.Status)
	}
	// After the compaction the model sees the summary, not what came before.
	body, err := db.Request(ctx, g.ID, last.Seq-1)
	if err != nil {
		t.Fatal(err)
	}
	req, err := chat.ReadRequest(body, "")
	if err != nil || len(req.Messages) != 1 || req.Messages[0].Text != "summary text" {
		t.Errorf("request after compaction: %s (%v)", body, err)
	}

	// --strict fails on the malformed line, naming it.
	if _, err := (claudecode.Format{}).Read(ctx, path, importers.Options{Strict: true}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s:17:", path)) {
		t.Errorf("strict: %v", err)
	}
	// Imported again (the session grew): the same run.
	res2, err := importers.Import(ctx, db, claudecode.Format{}, path, importers.Options{})
	if err != nil || res2[0].RunID != r.RunID {
		t.Errorf("re-import: %v %v", res2, err)
	}
}

func shape(g *graph.Run) string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "n%d %s %q f%d %s %s\n", n.Seq, n.Kind, n.Branch, n.ForkSeq, n.Agent, n.Status)
	}
	return b.String()
}

// TestNewest finds the newest session of a folder by its slug, in
// CLAUDE_CONFIG_DIR.
func TestNewest(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "projects", "-home-u-my-app")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"old.jsonl", "new.jsonl", "agent-x.jsonl"} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("{}\n"), 0o644)
		tm := base.Add(time.Duration(i) * time.Hour)
		os.Chtimes(p, tm, tm)
	}
	env := func(k string) string {
		if k == "CLAUDE_CONFIG_DIR" {
			return root
		}
		return ""
	}
	got, err := claudecode.Format{}.Newest("/home/u/my_app", env)
	if err != nil || got != filepath.Join(dir, "new.jsonl") {
		t.Errorf("Newest = %q, %v", got, err)
	}
	if _, err := (claudecode.Format{}).Newest("/elsewhere", env); err == nil || !strings.Contains(err.Error(), "-elsewhere") {
		t.Errorf("Newest of an unknown folder: %v", err)
	}
}

func TestDetect(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"codex.jsonl": `{"timestamp":"2026-03-01T10:00:00.120Z","type":"session_meta","payload":{"id":"P"}}` + "\n",
		"kimi.jsonl":  `{"type":"metadata","protocol_version":"1.5","created_at":1}` + "\n",
		"text.jsonl":  "hello\n",
		"empty.jsonl": "",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o644)
		if (claudecode.Format{}).Detect(p) {
			t.Errorf("Detect(%s) = true", name)
		}
	}
	if (claudecode.Format{}).Detect(dir) {
		t.Error("Detect(a folder) = true")
	}
}

// serialSession writes a session whose trunk reads three reports one by
// one and, when delegate is set, later starts one Explore sub-agent.
func serialSession(t *testing.T, cwd string, delegate bool) string {
	dir := filepath.Join(t.TempDir(), "projects", "p")
	m := &lines{t: t, session: "s2", cwd: cwd}
	m.user(0, "summarise eu, us and apac")
	for i, r := range []string{"eu", "us", "apac"} {
		sec := float64(1 + 2*i)
		m.asst(sec, "r"+r, 3, 100, 10, 20, use("c"+r, "Read", map[string]any{"file_path": r + ".md"}))
		m.result(sec+1, "c"+r, r+" revenue", false, nil)
	}
	if delegate {
		m.asst(8, "mt", 3, 100, 10, 20, task("t1", "notes", "find the notes", "Explore"))
		m.result(12, "t1", "notes found", false, map[string]any{"status": "completed", "agentId": "x1"})
		a := &lines{t: t, session: "s2", agent: "x1", cwd: cwd}
		a.user(8.1, "find the notes")
		a.asst(9, "mx", 2, 0, 0, 5, use("g", "Grep", map[string]any{"pattern": "notes"}))
		a.result(10, "g", "notes", false, nil)
		a.asst(11, "mx2", 2, 0, 0, 5, text("notes found"))
		a.write(filepath.Join(dir, "s2", "subagents", "agent-x1.jsonl"), true)
	}
	m.asst(13, "mf", 3, 100, 10, 20, text("done"))
	m.write(filepath.Join(dir, "s2.jsonl"), true)
	return filepath.Join(dir, "s2.jsonl")
}

// audit imports path and audits it as `inspect audit` does.
func audit(t *testing.T, path string) (*graph.Run, *findings.Report) {
	t.Helper()
	return auditWith(t, path, importers.Options{})
}

// auditWith is audit, imported under opt.
func auditWith(t *testing.T, path string, opt importers.Options) (*graph.Run, *findings.Report) {
	t.Helper()
	g, db, _ := importFileWith(t, path, opt)
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(context.Background(), g.ID, seq) }}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, rep
}

func finding(rep *findings.Report, rule string) *findings.Finding {
	for i := range rep.Findings {
		if rep.Findings[i].Rule == rule {
			return &rep.Findings[i]
		}
	}
	return nil
}

// TestInstructionFiles: CLAUDE.md and the sub-agent's definition in the
// session's working folder, when the import runs there (the user's own
// session of the folder they are in), are in the snapshot, and the fixes
// point at them. The three reads and the Task after them, each in its own
// response and none using another's result, are calls Claude Code runs at
// once from one response: fanout.missed says so (not "fork unavailable",
// and no sub-agents for three short reads); the lone Task, one Grep that
// cost a few percent of the run, is Claude Code's idiom, not
// fork.one-branch.
func TestInstructionFiles(t *testing.T) {
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".claude", "agents"), 0o755)
	os.WriteFile(filepath.Join(cwd, "CLAUDE.md"), []byte("# House rules\n\nKeep answers short.\nUse sub-agents when the work splits.\n"), 0o644)
	os.WriteFile(filepath.Join(cwd, ".claude", "agents", "Explore.md"), []byte("---\nname: Explore\n---\nExplore the code.\n"), 0o644)
	g, rep := auditWith(t, serialSession(t, cwd, true), importers.Options{Here: cwd})
	if g.Project.File("CLAUDE.md") == nil || g.Project.File(".claude/agents/Explore.md") == nil || g.Project.Name != filepath.Base(cwd) {
		t.Fatalf("snapshot %+v", g.Project)
	}
	f := finding(rep, "fanout.missed")
	if f == nil {
		t.Fatalf("no fanout.missed in %+v", rep.Findings)
	}
	if f.Fix.Location != (findings.Location{Path: "CLAUDE.md", Line: 4}) ||
		!strings.Contains(f.Fix.Text, "In CLAUDE.md, tell the main agent to make several calls (Read, Task) that do not depend on each other's results (eu.md, us.md, apac.md, notes) in one response") ||
		strings.Contains(f.Fix.Text, "sub-agent") || f.Causes[0].Check != "calls in one response" || f.Causes[0].Result != "no" {
		t.Errorf("fix %+v causes %+v", f.Fix, f.Causes)
	}
	if f.Price.LLMCalls != 3 || f.Next != "one response from main making the 4 calls (Read, Task)" {
		t.Errorf("price %+v, next %q: want the 3 round trips after the first saved", f.Price, f.Next)
	}
	if finding(rep, "fanout.missed.nofork") != nil {
		t.Error("fanout.missed.nofork reported too")
	}
	if ob := finding(rep, "fork.one-branch"); ob != nil {
		t.Errorf("fork.one-branch on a Task that cost a few percent of the run: %+v", ob)
	}
}

// TestInstructionFiles_None: without instruction files the fixes still go
// to CLAUDE.md, the file the user would write (a label: the snapshot has
// none), located at the session file. Three
// serial reads by an agent that never delegated are still calls for one
// response: Claude Code runs a response's calls at once, whatever its
// delegation tools (before: fanout.missed.nofork, "give main a
// delegation tool").
func TestInstructionFiles_None(t *testing.T) {
	path := serialSession(t, "/nonexistent/app", false)
	_, rep := audit(t, path)
	f := finding(rep, "fanout.missed")
	if f == nil || finding(rep, "fanout.missed.nofork") != nil {
		t.Fatalf("want fanout.missed alone in %+v", rep.Findings)
	}
	abs, _ := filepath.Abs(path)
	if f.Fix.Location != (findings.Location{Label: "CLAUDE.md", Source: abs}) ||
		!strings.Contains(f.Fix.Text, "in one response — Claude Code runs them at once") || strings.Contains(f.Fix.Text, "delegation tool") {
		t.Errorf("fix %+v causes %+v", f.Fix, f.Causes)
	}
	var sarif bytes.Buffer
	if err := report.WriteSARIF(&sarif, rep, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sarif.String(), `"uri": "file://`+filepath.ToSlash(abs)+`"`) {
		t.Errorf("SARIF does not locate the finding at the session file:\n%s", sarif.String())
	}
}
