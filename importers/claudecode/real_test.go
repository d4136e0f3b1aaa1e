package claudecode_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/mermaid/mermaidtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// transcripts is ../shared/transcripts/claude-code, found above the repo.
func transcripts(t *testing.T) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "shared", "transcripts", "claude-code")
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		if filepath.Dir(dir) == dir {
			t.Skip("../shared/transcripts/claude-code not found above the repository")
		}
		dir = filepath.Dir(dir)
	}
}

// tally is what a transcript holds, counted straight from its lines with
// generic JSON decoding: the rules of the research note, not the importer.
type tally struct {
	responses           int // distinct message.id
	tools               int // tool_use blocks other than Task/Agent
	research            int // of them: Read, Grep, Glob, LS, WebFetch, WebSearch
	tasks               int // Task/Agent tool_use blocks
	in, out, cached, cw int64
	first, last         time.Time
	taskAgents          map[string]string // Task tool_use id -> agentId of its result
	taskUsage           map[string]map[string]any
	lastMsgUsage        map[string]any // the usage kept for the file's last response
	lastMsgOut          int64
	perMsg              map[string]map[string]any
	order               []string
}

func count(t *testing.T, path string) *tally {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := &tally{taskAgents: map[string]string{}, taskUsage: map[string]map[string]any{}, perMsg: map[string]map[string]any{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	taskIDs := map[string]bool{}
	for sc.Scan() {
		var e map[string]any
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &e) != nil {
			continue
		}
		if ts, _ := e["timestamp"].(string); ts != "" && (e["type"] == "user" || e["type"] == "assistant") {
			tm, _ := time.Parse(time.RFC3339Nano, ts)
			if c.first.IsZero() {
				c.first = tm
			}
			c.last = tm
		}
		msg, _ := e["message"].(map[string]any)
		switch e["type"] {
		case "assistant":
			id, _ := msg["id"].(string)
			u, _ := msg["usage"].(map[string]any)
			if prev, ok := c.perMsg[id]; !ok {
				c.order = append(c.order, id)
				c.perMsg[id] = u
			} else if num(u["output_tokens"]) >= num(prev["output_tokens"]) {
				c.perMsg[id] = u
			}
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] != "tool_use" {
					continue
				}
				switch name, _ := bm["name"].(string); name {
				case "Task", "Agent":
					c.tasks++
					taskIDs[bm["id"].(string)] = true
				case "Read", "Grep", "Glob", "LS", "WebFetch", "WebSearch":
					c.tools++
					c.research++
				default:
					c.tools++
				}
			}
		case "user":
			blocks, _ := msg["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				id, _ := bm["tool_use_id"].(string)
				if bm["type"] == "tool_result" && taskIDs[id] {
					tur, _ := e["toolUseResult"].(map[string]any)
					c.taskAgents[id], _ = tur["agentId"].(string)
					c.taskUsage[id], _ = tur["usage"].(map[string]any)
				}
			}
		}
	}
	for _, id := range c.order {
		u := c.perMsg[id]
		c.in += num(u["input_tokens"]) + num(u["cache_read_input_tokens"]) + num(u["cache_creation_input_tokens"])
		c.out += num(u["output_tokens"])
		c.cached += num(u["cache_read_input_tokens"])
		c.cw += num(u["cache_creation_input_tokens"])
	}
	c.responses = len(c.order)
	if len(c.order) > 0 {
		c.lastMsgUsage = c.perMsg[c.order[len(c.order)-1]]
	}
	return c
}

func num(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}

func importFile(t *testing.T, path string) (*graph.Run, *store.DB, []importers.Result) {
	t.Helper()
	return importFileWith(t, path, importers.Options{})
}

// importFileWith is importFile under opt.
func importFileWith(t *testing.T, path string, opt importers.Options) (*graph.Run, *store.DB, []importers.Result) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	res, err := importers.Import(ctx, db, claudecode.Format{}, path, opt)
	if err != nil {
		t.Fatalf("import %s: %v", path, err)
	}
	if len(res) != 1 {
		t.Fatalf("%d sessions, want 1", len(res))
	}
	g, err := graph.Load(ctx, db, res[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	return g, db, res
}

// totals sums the imported run as the graph holds it.
type totals struct {
	llm, tools, research, branches int
	in, out, cached, cw            int64
}

func sum(g *graph.Run) totals {
	var s totals
	for _, n := range g.Nodes {
		switch n.Kind {
		case record.KindLLM:
			s.llm++
			s.in += n.LLM.Usage.In
			s.out += n.LLM.Usage.Out
			s.cached += n.LLM.Usage.Cached
			s.cw += n.LLM.Usage.CacheWrite
		case record.KindTool:
			s.tools++
			if n.Tool.Research {
				s.research++
			}
		}
	}
	for _, f := range g.Forks {
		s.branches += len(f.Branches)
	}
	return s
}

// TestReal_WithSubagent imports the real 2.1.39 excerpt with its real
// sub-agent and compares the run with the counts taken from the raw files.
func TestReal_WithSubagent(t *testing.T) {
	dir := transcripts(t)
	main := filepath.Join(dir, "ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl")
	sub := filepath.Join(dir, "ae4a77f8-aedd-4bc1-888f-c94edc91af04", "subagents", "agent-aac57f5.jsonl")
	cm, cs := count(t, main), count(t, sub)
	g, db, res := importFile(t, main)

	// The sub-agent file keeps a streaming snapshot of its last output
	// count; the parent's toolUseResult has that call's final usage.
	subOut := cs.out
	for id, agent := range cm.taskAgents {
		u := cm.taskUsage[id]
		if agent == "aac57f5" && u != nil && num(u["input_tokens"]) == num(cs.lastMsgUsage["input_tokens"]) &&
			num(u["cache_read_input_tokens"]) == num(cs.lastMsgUsage["cache_read_input_tokens"]) {
			subOut += num(u["output_tokens"]) - num(cs.lastMsgUsage["output_tokens"])
		}
	}
	want := totals{llm: cm.responses + cs.responses, tools: cm.tools + cs.tools, research: cm.research + cs.research,
		branches: cm.tasks, in: cm.in + cs.in, out: cm.out + subOut, cached: cm.cached + cs.cached, cw: cm.cw + cs.cw}
	if got := sum(g); got != want {
		t.Errorf("imported totals %+v\nfrom the files  %+v", got, want)
	}
	if want.llm != 5 || want.tools != 19 || want.branches != 1 || subOut != 3+3+938 {
		t.Errorf("the raw counts changed: %+v (sub-agent out %d)", want, subOut)
	}
	if r := res[0]; r.Conversations != 2 || r.Source.ID != "ae4a77f8-aedd-4bc1-888f-c94edc91af04" || r.Source.Version != "2.1.39" {
		t.Errorf("result %+v", r)
	}
	// The excerpt starts with the result of a call made before it.
	if n := res[0].Report.Skipped["tool result without its call"]; n != 1 {
		t.Errorf("skipped %v", res[0].Report.Skipped)
	}

	// The Task call is a one-branch fork whose branch is the sub-agent,
	// joined where its result came back; the run, cut mid-turn, reads
	// interrupted.
	if len(g.Forks) != 1 {
		t.Fatalf("%d forks", len(g.Forks))
	}
	f := g.Forks[0]
	b := f.Branches[0]
	if f.Node.Fork.Tool != "Task" || b.Agent != "general-purpose" || b.Status != record.StatusOK || f.Join == nil ||
		b.Name != "Check OTEL hex package versions" || !strings.HasPrefix(b.Answer, "Perfect! I now have all the version information") {
		t.Errorf("fork %+v branch %+v", f.Node.Fork, b)
	}
	if window := cs.last.Sub(cs.first); b.Duration < window {
		t.Errorf("branch lasted %v, its file spans %v", b.Duration, window)
	}
	if !f.Node.Started.Equal(parseTS(t, "2026-02-12T14:12:32.519Z")) || !f.Join.Started.Equal(parseTS(t, "2026-02-12T14:13:05.070Z")) {
		t.Errorf("fork at %v, join at %v", f.Node.Started, f.Join.Started)
	}
	if g.Status != record.StatusInterrupted || b.Conv.Depth != 1 || b.Conv.Path != b.Name {
		t.Errorf("run %s, branch conv %+v", g.Status, b.Conv)
	}
	// One response with six parallel Reads: one llm node, six tools after it.
	first := g.Nodes[0]
	if first.Kind != record.KindLLM || len(first.LLM.Calls) != 6 || g.Nodes[6].Tool.Name != "Read" || g.Nodes[7].Kind != record.KindLLM {
		t.Errorf("first response: %+v", first.LLM)
	}
	readable(t, g, db)
}

// TestReal_ToolHeavy imports the real 2.1.38 session: parallel calls in one
// response, a background Bash, two turns the user interrupted.
func TestReal_ToolHeavy(t *testing.T) {
	path := filepath.Join(transcripts(t), "tool_heavy.jsonl")
	c := count(t, path)
	g, db, res := importFile(t, path)
	want := totals{llm: c.responses, tools: c.tools, research: c.research, in: c.in, out: c.out, cached: c.cached, cw: c.cw}
	if got := sum(g); got != want {
		t.Errorf("imported totals %+v\nfrom the file    %+v", got, want)
	}
	if want.llm != 4 || want.tools != 6 || want.research != 4 {
		t.Errorf("the raw counts changed: %+v", want)
	}
	if len(res[0].Report.Skipped) != 0 || len(res[0].Report.Problems) != 0 {
		t.Errorf("report %+v", res[0].Report)
	}
	// The user interrupted the last turn and the session ends there.
	if g.Status != record.StatusCancelled {
		t.Errorf("run status %s", g.Status)
	}
	var users, cancelled []string
	for _, n := range g.Nodes {
		if n.Kind == record.KindUser {
			users = append(users, n.Text)
		}
		if n.Kind == record.KindFinal && n.Status == record.StatusCancelled {
			cancelled = append(cancelled, n.ID())
		}
	}
	if len(users) != 3 || users[0] != "start phoenix in background" || users[1] != "/mcp" || len(cancelled) != 2 {
		t.Errorf("turns %q, cancelled finals %v", users, cancelled)
	}
	readable(t, g, db)
}

// TestReal_SubagentAlone: a sub-agent's file imported on its own (its
// parent missing) is a run of its own, keyed apart from the session.
func TestReal_SubagentAlone(t *testing.T) {
	path := filepath.Join(transcripts(t), "ae4a77f8-aedd-4bc1-888f-c94edc91af04", "subagents", "agent-aac57f5.jsonl")
	c := count(t, path)
	g, db, res := importFile(t, path)
	got := sum(g)
	if got.llm != c.responses || got.tools != c.tools || got.in != c.in || got.out != c.out {
		t.Errorf("imported %+v, file %+v", got, c)
	}
	if res[0].Source.ID != "ae4a77f8-aedd-4bc1-888f-c94edc91af04#agent-aac57f5" || g.Nodes[0].Kind != record.KindUser ||
		!strings.HasPrefix(g.Tasks[0], "Search hex.pm") || g.Status != record.StatusOK {
		t.Errorf("source %+v, first node %s, status %s", res[0].Source, g.Nodes[0].Kind, g.Status)
	}
	readable(t, g, db)
}

func parseTS(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// readable: the run's Mermaid parses with the real Mermaid parser, the
// audit runs every rule, and ask --dry-run of every llm node builds a body
// that says it is reconstructed.
func readable(t *testing.T, g *graph.Run, db *store.DB) {
	t.Helper()
	var buf bytes.Buffer
	if err := mermaid.Fprint(&buf, g); err != nil {
		t.Fatal(err)
	}
	mermaidtest.Check(t, map[string][]byte{"run.mmd": buf.Bytes()})
	rep, err := (&findings.Config{Rules: rules.All, Requests: func(seq int64) ([]byte, error) { return db.Request(context.Background(), g.ID, seq) }}).Audit(g)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	var rules []string
	for _, c := range rep.Checks {
		rules = append(rules, c.Rule)
	}
	sort.Strings(rules)
	if len(rules) < 10 {
		t.Errorf("audit checked %v", rules)
	}
	for _, n := range g.Nodes {
		if n.Kind != record.KindLLM {
			continue
		}
		p, err := ask.NewPlan(context.Background(), db, g, n.Seq, ask.Options{DryRun: true})
		if err != nil {
			t.Fatalf("ask %s --dry-run: %v", n.ID(), err)
		}
		if len(p.Body) == 0 || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "reconstructed from the claude-code source") {
			t.Errorf("ask %s: notes %q", n.ID(), p.Notes)
		}
	}
}
