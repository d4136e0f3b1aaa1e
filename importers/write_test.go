package importers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

var t0 = time.Date(2026, 2, 10, 22, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func openDB(t *testing.T) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// load writes s into db and reads its run back as the graph sees it.
func load(t *testing.T, db *store.DB, s *importers.Session) *graph.Run {
	t.Helper()
	id, err := importers.Write(context.Background(), db, s)
	if err != nil {
		t.Fatalf("Write: %v", err)
	}
	g, err := graph.Load(context.Background(), db, id)
	if err != nil {
		t.Fatalf("graph.Load: %v", err)
	}
	return g
}

// shape is one line per node: n<seq> kind branch fork depth agent status.
func shape(g *graph.Run) string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "n%d %s %q f%d d%d %s %s\n", n.Seq, n.Kind, n.Branch, n.ForkSeq, n.Depth, n.Agent, n.Status)
	}
	return b.String()
}

func src(id string) record.Source {
	return record.Source{Format: "test-format", Version: "1.0", ID: id, Path: "session.jsonl"}
}

func llm(start, end float64, content string, calls ...string) importers.Step {
	return importers.Step{LLM: &importers.LLM{Started: at(start), Ended: at(end), Model: "m1", Content: content, Calls: calls,
		Usage: record.Usage{In: 100, Out: 10, Cached: 60, CachedReported: true, CacheWrite: 30, CacheWriteReported: true}}}
}

func tool(start, end float64, id, name, args, result string) importers.Step {
	return importers.Step{Tool: &importers.Tool{Started: at(start), Ended: at(end), CallID: id, Name: name, Args: args, Result: result, Research: true}}
}

func user(sec float64, text string) importers.Step {
	return importers.Step{User: &importers.User{At: at(sec), Text: text}}
}

func final(sec float64, text string) importers.Step {
	return importers.Step{Final: &importers.Final{At: at(sec), Text: text}}
}

func TestWrite_Serial(t *testing.T) {
	db := openDB(t)
	s := &importers.Session{Source: src("serial"), Started: at(0), Ended: at(10), Tasks: []string{"look"}, Dir: "/home/u/app",
		RequestsLack: []string{"the system prompt"},
		Trunk: &importers.Conversation{Agent: "main", Started: at(0), Ended: at(10), Steps: []importers.Step{
			user(0, "look"),
			llm(1, 2, "reading", "Read"),
			tool(2, 3, "c1", "Read", `{"file_path":"a.md"}`, "alpha"),
			llm(3, 4, "done"),
			final(4, "done"),
		}}}
	g := load(t, db, s)
	want := `n1 user "" f0 d0 main ok
n2 llm "" f0 d0 main ok
n3 tool "" f0 d0 main ok
n4 llm "" f0 d0 main ok
n5 final "" f0 d0 main ok
`
	if got := shape(g); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
	if g.Status != record.StatusOK || g.Source.Format != "test-format" || g.Source.ID != "serial" {
		t.Errorf("run status %s source %+v", g.Status, g.Source)
	}
	if g.Options.ProjectDir != "/home/u/app" || g.Project.Name != "app" {
		t.Errorf("project dir %q name %q", g.Options.ProjectDir, g.Project.Name)
	}
	if got := g.Options.RequestsLack; len(got) != 1 || got[0] != "the system prompt" {
		t.Errorf("Options.RequestsLack = %q", got)
	}
	n2 := g.Node(2)
	if n2.LLM.Fidelity != record.FidelityReconstructed || n2.LLM.Usage.In != 100 || n2.LLM.Usage.Cached != 60 || n2.LLM.Usage.CacheWrite != 30 {
		t.Errorf("n2 llm = %+v", n2.LLM)
	}
	if n5 := g.Node(5); n5.Text != "done" {
		t.Errorf("final text %q", n5.Text)
	}
	// n4's request holds what the model saw: the task, the first response
	// with its call, the call's result.
	body, err := db.Request(context.Background(), g.ID, 4)
	if err != nil {
		t.Fatal(err)
	}
	req, err := chat.ReadRequest(body, "")
	if err != nil {
		t.Fatalf("read request: %v\n%s", err, body)
	}
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "user,assistant,tool" || req.Model != "m1" {
		t.Fatalf("n4 request roles %v model %q:\n%s", roles, req.Model, body)
	}
	if c := req.Messages[1].Calls; len(c) != 1 || c[0].ID != "c1" || c[0].Name != "Read" || c[0].Arguments != `{"file_path":"a.md"}` {
		t.Errorf("assistant calls = %+v", c)
	}
	if req.Messages[2].Text != "alpha" || req.Messages[2].CallID != "c1" {
		t.Errorf("tool message = %+v", req.Messages[2])
	}
	// n2's request is the task alone.
	body, _ = db.Request(context.Background(), g.ID, 2)
	if req, _ := chat.ReadRequest(body, ""); req == nil || len(req.Messages) != 1 || req.Messages[0].Text != "look" {
		t.Errorf("n2 request = %s", body)
	}
}

// TestWrite_NestedForks: a fork of two branches, the first forking again;
// node order, paths, depths and fork seqs as the runtime records them, and
// the graph links every branch to its conversation.
func TestWrite_NestedForks(t *testing.T) {
	db := openDB(t)
	inner := &importers.Fork{At: at(3), Tool: "Task", JoinAt: at(6), Branches: []*importers.Branch{
		{Name: "x", Agent: "Explore", Instructions: "do x", CallID: "t3", Answer: "x done",
			Conv: &importers.Conversation{Started: at(3), Ended: at(5), Steps: []importers.Step{llm(3, 4, "x done"), final(5, "x done")}}},
	}}
	outer := &importers.Fork{At: at(2), Tool: "Task", JoinAt: at(9), Branches: []*importers.Branch{
		{Name: "a", Agent: "general-purpose", Instructions: "do a", CallID: "t1", Answer: "a done",
			Conv: &importers.Conversation{Started: at(2), Ended: at(7), Steps: []importers.Step{
				llm(2, 3, "", "Task"), {Fork: inner}, llm(6, 7, "a done"), final(7, "a done")}}},
		{Name: "b", Agent: "Explore", Instructions: "do b", CallID: "t2",
			Conv: &importers.Conversation{Started: at(2), Status: record.StatusExhausted, Error: "turn limit", Ended: at(8),
				Steps: []importers.Step{llm(2, 8, "", "Read"), tool(8, 8, "r1", "Read", `{}`, "")}}},
	}}
	s := &importers.Session{Source: src("nested"), Started: at(0), Ended: at(10),
		Trunk: &importers.Conversation{Started: at(0), Ended: at(10), Steps: []importers.Step{
			user(0, "go"), llm(1, 2, "", "Task", "Task"), {Fork: outer}, llm(9, 10, "all done"), final(10, "all done")}}}
	g := load(t, db, s)
	want := `n1 user "" f0 d0 main ok
n2 llm "" f0 d0 main ok
n3 fork "" f0 d0 main ok
n4 llm "a" f3 d1 general-purpose ok
n5 fork "a" f3 d1 general-purpose ok
n6 llm "a/x" f5 d2 Explore ok
n7 final "a/x" f5 d2 Explore ok
n8 join "a" f3 d1 general-purpose ok
n9 llm "a" f3 d1 general-purpose ok
n10 final "a" f3 d1 general-purpose ok
n11 llm "b" f3 d1 Explore ok
n12 tool "b" f3 d1 Explore ok
n13 final "b" f3 d1 Explore exhausted
n14 join "" f0 d0 main ok
n15 llm "" f0 d0 main ok
n16 final "" f0 d0 main ok
`
	if got := shape(g); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
	if len(g.Forks) != 2 {
		t.Fatalf("%d forks", len(g.Forks))
	}
	f := g.Node(3).ForkOf
	if f.Join == nil || f.Join.Seq != 14 || f.Node.Fork.Tool != "Task" || f.Context != "none" {
		t.Fatalf("outer fork %+v", f)
	}
	got := []string{}
	for _, b := range f.Branches {
		got = append(got, fmt.Sprintf("%s@%s=%s %s %d nodes %q", b.Name, b.Agent, b.Status, b.Duration, len(b.Conv.Nodes), b.Answer))
	}
	wantB := []string{`a@general-purpose=ok 5s 5 nodes "a done"`, `b@Explore=exhausted 6s 3 nodes "turn limit"`}
	if strings.Join(got, "\n") != strings.Join(wantB, "\n") {
		t.Errorf("branches:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantB, "\n"))
	}
	if f.Slowest == nil || f.Slowest.Name != "b" {
		t.Errorf("slowest = %v", f.Slowest)
	}
	if b := g.Node(5).ForkOf.Branches[0]; b.Conv == nil || b.Conv.Path != "a/x" || b.Conv.Depth != 2 {
		t.Errorf("inner branch conv = %+v", b.Conv)
	}
	// The branch's first request is its instructions (context none).
	body, _ := db.Request(context.Background(), g.ID, 11)
	if req, err := chat.ReadRequest(body, ""); err != nil || len(req.Messages) != 1 || req.Messages[0].Text != "do b" {
		t.Errorf("n11 request = %s (%v)", body, err)
	}
	// The trunk's request after the join holds both delegation results.
	body, _ = db.Request(context.Background(), g.ID, 15)
	req, err := chat.ReadRequest(body, "")
	if err != nil || len(req.Messages) != 4 || req.Messages[2].Text != "a done" || req.Messages[3].Text != "turn limit" {
		t.Errorf("n15 request = %s (%v)", body, err)
	}
	if c := req.Messages[1].Calls; len(c) != 2 || c[0].Name != "Task" || !strings.Contains(c[0].Arguments, `"prompt":"do a"`) {
		t.Errorf("delegation calls = %+v", c)
	}
}

// TestWrite_NeverJoined: a live session whose sub-agent is still working:
// no join, the branch and the run read interrupted, the run ends at its
// last node.
func TestWrite_NeverJoined(t *testing.T) {
	db := openDB(t)
	s := &importers.Session{Source: src("live"), Started: at(0),
		Trunk: &importers.Conversation{Started: at(0), Steps: []importers.Step{
			user(0, "go"), llm(1, 2, "", "Task"),
			{Fork: &importers.Fork{At: at(2), Tool: "Task", Branches: []*importers.Branch{
				{Name: "a1b2c3", Agent: "Explore", Instructions: "look", CallID: "t1",
					Conv: &importers.Conversation{Started: at(2), Steps: []importers.Step{llm(2, 3, "", "Read"), {Tool: &importers.Tool{Started: at(3), CallID: "r1", Name: "Read", Args: `{}`}}}}},
				{Name: "gone", Instructions: "other", CallID: "t2"}, // no transcript found
			}}},
		}}}
	g := load(t, db, s)
	want := `n1 user "" f0 d0 main ok
n2 llm "" f0 d0 main ok
n3 fork "" f0 d0 main ok
n4 llm "a1b2c3" f3 d1 Explore ok
n5 tool "a1b2c3" f3 d1 Explore interrupted
n6 final "a1b2c3" f3 d1 Explore interrupted
n7 final "gone" f3 d1 main interrupted
n8 final "" f0 d0 main interrupted
`
	if got := shape(g); got != want {
		t.Errorf("nodes:\n%s\nwant:\n%s", got, want)
	}
	if g.Status != record.StatusInterrupted || !g.Ended.Equal(at(3)) {
		t.Errorf("run %s ended %v", g.Status, g.Ended)
	}
	f := g.Forks[0]
	if f.Join != nil {
		t.Errorf("a join was recorded")
	}
	for _, b := range f.Branches {
		if b.Status != record.StatusInterrupted {
			t.Errorf("branch %s = %s", b.Name, b.Status)
		}
	}
	if e := g.Node(7).Error; !strings.Contains(e, "no transcript") {
		t.Errorf("missing sub-agent's final error = %q", e)
	}
}

// TestWrite_SerialOneBranchForks: delegations one after another, each in
// its own response, are one-branch forks each, joined in turn.
func TestWrite_SerialOneBranchForks(t *testing.T) {
	db := openDB(t)
	var steps []importers.Step
	steps = append(steps, user(0, "go"))
	for i := 0; i < 3; i++ {
		b := float64(1 + 3*i)
		steps = append(steps, llm(b, b+1, "", "Task"), importers.Step{Fork: &importers.Fork{At: at(b + 1), Tool: "Task", JoinAt: at(b + 3),
			Branches: []*importers.Branch{{Name: "job", Agent: "Explore", Instructions: fmt.Sprintf("job %d", i), CallID: fmt.Sprint("t", i), Answer: "ok",
				Conv: &importers.Conversation{Started: at(b + 1), Ended: at(b + 3), Steps: []importers.Step{llm(b+1, b+3, "ok"), final(b+3, "ok")}}}}}})
	}
	steps = append(steps, llm(10, 11, "done"), final(11, "done"))
	g := load(t, db, &importers.Session{Source: src("serial-forks"), Started: at(0), Ended: at(11),
		Trunk: &importers.Conversation{Started: at(0), Ended: at(11), Steps: steps}})
	if len(g.Forks) != 3 {
		t.Fatalf("%d forks, want 3", len(g.Forks))
	}
	for i, f := range g.Forks {
		if len(f.Branches) != 1 || f.Join == nil || f.Branches[0].Conv.Path != "job" || f.Branches[0].Status != record.StatusOK || f.Branches[0].Duration != 2*time.Second {
			t.Errorf("fork %d: %+v join %v", i, f.Branches[0], f.Join)
		}
	}
	// Two forks open branches of the same name: (ForkSeq, Branch) tells them apart.
	if a, b := g.Forks[0].Branches[0].Conv, g.Forks[1].Branches[0].Conv; a == b || len(a.Nodes) != 2 || len(b.Nodes) != 2 {
		t.Errorf("branch conversations mixed: %d and %d nodes", len(a.Nodes), len(b.Nodes))
	}
}

func TestWrite_Empty(t *testing.T) {
	for _, tt := range []struct {
		name   string
		s      *importers.Session
		status record.Status
	}{
		{"no trunk", &importers.Session{Source: src("e1"), Started: at(0)}, record.StatusInterrupted},
		{"ended", &importers.Session{Source: src("e2"), Started: at(0), Ended: at(1), Trunk: &importers.Conversation{Ended: at(1)}}, record.StatusOK},
		{"cancelled", &importers.Session{Source: src("e3"), Started: at(0), Trunk: &importers.Conversation{Status: record.StatusCancelled, Error: "stopped"}}, record.StatusCancelled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := load(t, openDB(t), tt.s)
			if len(g.Nodes) != 1 || g.Nodes[0].Kind != record.KindFinal || g.Nodes[0].Status != tt.status || g.Status != tt.status {
				t.Errorf("run %s nodes:\n%s", g.Status, shape(g))
			}
		})
	}
}

// TestWrite_Reimport: importing the same source again updates its run
// under the same id (nodes replaced, asks kept); another source is
// another run.
func TestWrite_Reimport(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := &importers.Session{Source: src("same"), Started: at(0),
		Trunk: &importers.Conversation{Started: at(0), Steps: []importers.Step{user(0, "go"), llm(1, 2, "", "Read")}}}
	id1, err := importers.Write(ctx, db, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AddAsk(ctx, &store.Ask{RunID: id1, NodeSeq: 2, Mode: "question", Question: "why?"}); err != nil {
		t.Fatal(err)
	}
	// The session grew: the call got its result and the turn ended.
	s.Trunk.Steps = append(s.Trunk.Steps, tool(2, 3, "c1", "Read", `{}`, "x"), llm(3, 4, "done"), final(4, "done"))
	s.Trunk.Ended, s.Ended = at(4), at(4)
	s.Project = record.Project{Name: "p", Files: []record.File{{Path: "CLAUDE.md", Content: "be brief"}}}
	id2, err := importers.Write(ctx, db, s)
	if err != nil {
		t.Fatal(err)
	}
	if id1 != id2 {
		t.Fatalf("re-import made run %s, want %s", id2, id1)
	}
	id3, err := importers.Write(ctx, db, &importers.Session{Source: src("other"), Started: at(5), Trunk: &importers.Conversation{Ended: at(5)}})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || id3 == id1 {
		t.Fatalf("%d runs, want 2", len(runs))
	}
	for _, r := range runs {
		if r.ID == id1 && (r.Nodes != 5 || r.Status != record.StatusOK || r.LLMCalls != 2) {
			t.Errorf("re-imported run: %+v", r)
		}
	}
	g, err := graph.Load(ctx, db, id1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != record.StatusOK || len(g.Nodes) != 5 || g.Project.File("CLAUDE.md") == nil {
		t.Errorf("re-imported run %s, %d nodes, files %v", g.Status, len(g.Nodes), g.Project.Files)
	}
	asks, err := db.Asks(ctx, id1, 0)
	if err != nil || len(asks) != 1 {
		t.Errorf("asks after re-import: %v %v", asks, err)
	}
	if body, err := db.Request(ctx, id1, 4); err != nil || !strings.Contains(string(body), `"x"`) {
		t.Errorf("request after re-import: %s %v", body, err)
	}
}

// TestWrite_Usage: impossible counts are recorded within bounds and say so.
func TestWrite_Usage(t *testing.T) {
	step := llm(1, 2, "x")
	step.LLM.Usage = record.Usage{In: -5, Out: 1 << 50}
	g := load(t, openDB(t), &importers.Session{Source: src("u"), Started: at(0), Ended: at(2),
		Trunk: &importers.Conversation{Ended: at(2), Steps: []importers.Step{user(0, "x"), step, final(2, "x")}}})
	n := g.Node(2)
	if n.LLM.Usage.In != 0 || n.LLM.Usage.Out != record.MaxTokens || !strings.Contains(n.Error, "impossible usage") {
		t.Errorf("usage %+v error %q", n.LLM.Usage, n.Error)
	}
}

// TestWrite_InheritAndCompact: an inherit branch starts from the parent's
// messages up to the delegating response; a compaction restarts the
// visible history from its summary.
func TestWrite_InheritAndCompact(t *testing.T) {
	db := openDB(t)
	s := &importers.Session{Source: src("inherit"), Started: at(0), Ended: at(9),
		Trunk: &importers.Conversation{Started: at(0), Ended: at(9), System: "you are main",
			Tools: []importers.ToolDef{{Name: "spawn_agent", Description: "spawn", Parameters: []byte(`{"type":"object"}`)}},
			Steps: []importers.Step{
				user(0, "go"), llm(1, 2, "", "spawn_agent"),
				{Fork: &importers.Fork{At: at(2), Tool: "spawn_agent", Context: "inherit", JoinAt: at(4), Branches: []*importers.Branch{
					{Name: "kid", Instructions: "help", CallID: "s1", Answer: "helped",
						Conv: &importers.Conversation{Ended: at(4), Steps: []importers.Step{llm(2, 3, "helped"), final(4, "helped")}}}}}},
				{Compact: &importers.Compact{At: at(5), Summary: "summary so far"}},
				llm(6, 7, "done"), final(9, "done"),
			}}}
	g := load(t, db, s)
	body, _ := db.Request(context.Background(), g.ID, 4) // the branch's llm
	req, err := chat.ReadRequest(body, "")
	if err != nil || len(req.Messages) != 4 || req.System != "you are main" || req.Messages[3].Text != "help" || req.Tool("spawn_agent") == nil {
		t.Errorf("inherit branch request = %s (%v)", body, err)
	}
	if g.Node(3).Fork.Context != "inherit" || g.Node(4).Agent != "main" {
		t.Errorf("fork %+v, branch agent %q", g.Node(3).Fork, g.Node(4).Agent)
	}
	body, _ = db.Request(context.Background(), g.ID, 7) // after the compaction
	req, err = chat.ReadRequest(body, "")
	if err != nil || len(req.Messages) != 2 || req.Messages[1].Text != "summary so far" {
		t.Errorf("request after compaction = %s (%v)", body, err)
	}
}

// TestWrite_StepNotOneKind: a step with nothing set, one with two kinds
// set, and a fork with a missing branch fail the write and say where,
// trunk or branch, live or not; before, the empty step was dropped and the
// double one recorded as its first kind.
func TestWrite_StepNotOneKind(t *testing.T) {
	u := importers.Step{User: &importers.User{At: at(0), Text: "go"}}
	for _, tt := range []struct {
		name string
		bad  importers.Step
		want string
	}{
		{"empty", importers.Step{}, "the trunk, step 2: a step with nothing set"},
		{"two kinds", importers.Step{User: &importers.User{At: at(1)}, Final: &importers.Final{At: at(1)}}, "the trunk, step 2: a step that is User and Final at once"},
		{"nil branch", importers.Step{Fork: &importers.Fork{At: at(1), Branches: []*importers.Branch{nil}}}, "the trunk, step 2: a fork with a missing branch"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, live := range []bool{false, true} {
				c := &importers.Conversation{Agent: "main", Steps: []importers.Step{u, tt.bad, llm(2, 3, "done")}}
				if live {
					c = &importers.Conversation{Agent: "main", Live: &steps{list: c.Steps}}
				}
				_, err := importers.Write(context.Background(), openDB(t), &importers.Session{Source: src("bad-" + tt.name), Trunk: c})
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("live %v: %v, want an error saying %q", live, err, tt.want)
				}
			}
		})
	}
	// In a branch, the error names its path.
	branch := &importers.Conversation{Agent: "w", Steps: []importers.Step{{}}}
	fork := importers.Step{Fork: &importers.Fork{At: at(1), JoinAt: at(2), Branches: []*importers.Branch{{Name: "w1", Agent: "w", Conv: branch}}}}
	_, err := importers.Write(context.Background(), openDB(t), &importers.Session{Source: src("bad-branch"),
		Trunk: &importers.Conversation{Agent: "main", Steps: []importers.Step{u, fork}}})
	if err == nil || !strings.Contains(err.Error(), "branch w1, step 1: a step with nothing set") {
		t.Errorf("in a branch: %v", err)
	}
}

// steps hands a list over as a live conversation.
type steps struct{ list []importers.Step }

func (s *steps) Next() (importers.Step, bool, error) {
	if len(s.list) == 0 {
		return importers.Step{}, false, nil
	}
	st := s.list[0]
	s.list = s.list[1:]
	return st, true, nil
}
