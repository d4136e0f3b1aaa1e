package runtime_test

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

	"github.com/inspect-dev/inspect/graph"
	goldenfile "github.com/inspect-dev/inspect/internal/golden"
	"github.com/inspect-dev/inspect/record"

	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
	openai "github.com/sashabaranov/go-openai"
)

// request returns the decoded request body recorded for node n.
func request(t *testing.T, db *store.DB, n *record.Node) openai.ChatCompletionRequest {
	t.Helper()
	body, err := db.Request(context.Background(), "testrun", n.Seq)
	if err != nil {
		t.Fatalf("Request(n%d): %v", n.Seq, err)
	}
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("request of n%d is not JSON: %v", n.Seq, err)
	}
	return req
}

// first returns the first node matching the predicate.
func first(t *testing.T, ns []*record.Node, what string, ok func(*record.Node) bool) *record.Node {
	t.Helper()
	for _, n := range ns {
		if ok(n) {
			return n
		}
	}
	t.Fatalf("no %s node in\n%s", what, outline(ns))
	return nil
}

func llmIn(branch string) func(*record.Node) bool {
	return func(n *record.Node) bool { return n.Kind == record.KindLLM && n.Branch == branch }
}

func toolNames(req openai.ChatCompletionRequest) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// runtimeFixtures are the fixtures of the runtime's own semantics; the audit
// fixtures next to them are tested where their rules live.
var runtimeFixtures = []string{"fanout-compact", "handoff-chain", "nested-fork-depth-cap", "failing-branch", "inherit-same-agent"}

// TestFixtures runs each runtime fixture and compares its outline (kinds,
// branches, agents, statuses, virtual times) with a golden file.
func TestFixtures(t *testing.T) {
	for _, name := range runtimeFixtures {
		t.Run(name, func(t *testing.T) {
			res, _, ns := runFixture(t, fixture(name), nil)
			if res.Status != record.StatusOK {
				t.Errorf("Status = %q (%s), want ok", res.Status, res.Error)
			}
			golden(t, filepath.Join("fixtures", name+".txt"), []byte(outline(ns)))
			// every conversation ends with a final node; every fork has a join
			finals, forks, joins := map[string]bool{}, 0, 0
			for _, n := range ns {
				switch n.Kind {
				case record.KindFinal:
					finals[n.Branch] = true
				case record.KindFork:
					forks++
				case record.KindJoin:
					joins++
				}
				if n.Status == record.StatusRunning {
					t.Errorf("n%d is still running after the run", n.Seq)
				}
			}
			if forks != joins {
				t.Errorf("%d forks but %d joins", forks, joins)
			}
			for _, n := range ns {
				if !finals[n.Branch] {
					t.Errorf("conversation %q has no final node", n.Branch)
				}
			}
		})
	}
}

// TestBranchMessages checks the exact messages a branch starts from under
// each context mode, on the forking agent (x) and on another agent (y).
func TestBranchMessages(t *testing.T) {
	dir := filepath.Join("testdata", "contexts")
	tmpl, err := os.ReadFile(filepath.Join(dir, "script.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"inherit", "compact", "none"} {
		t.Run(mode, func(t *testing.T) {
			script := filepath.Join(t.TempDir(), "script.yaml")
			os.WriteFile(script, bytes.ReplaceAll(tmpl, []byte("CONTEXT"), []byte(mode)), 0o644)
			res, db, ns := runFixture(t, dir, func(c *runtime.Config) { c.Script = script })
			if res.Status != record.StatusOK {
				t.Fatalf("Status = %q (%s)\n%s", res.Status, res.Error, outline(ns))
			}
			for _, br := range []string{"x", "y"} {
				n := first(t, ns, "llm in "+br, llmIn(br))
				body, err := db.Request(context.Background(), "testrun", n.Seq)
				if err != nil {
					t.Fatal(err)
				}
				var req struct {
					Messages json.RawMessage `json:"messages"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Fatal(err)
				}
				var pretty bytes.Buffer
				json.Indent(&pretty, req.Messages, "", "  ")
				pretty.WriteByte('\n')
				golden(t, filepath.Join("branch-messages", mode+"-"+br+".json"), pretty.Bytes())
			}
			// independent of the goldens: the rules of the table
			x := request(t, db, first(t, ns, "llm in x", llmIn("x")))
			y := request(t, db, first(t, ns, "llm in y", llmIn("y")))
			if x.Messages[0].Role != "system" || !strings.Contains(x.Messages[0].Content, "You are the lead.") {
				t.Errorf("x starts with %q, want the lead's system prompt", x.Messages[0].Content)
			}
			if !strings.Contains(y.Messages[0].Content, "You are a helper.") || strings.Contains(y.Messages[0].Content, "You are the lead.") {
				t.Errorf("y's system prompt = %q, want only the helper's", y.Messages[0].Content)
			}
			last := y.Messages[len(y.Messages)-1]
			switch mode {
			case "none":
				if len(y.Messages) != 2 || last.Role != "user" || last.Content != "Work on y." {
					t.Errorf("none: y's messages = %+v, want system + the instructions as a user message", y.Messages)
				}
			default:
				if last.Role != "tool" || !strings.Contains(last.Content, `You are branch "y"`) || !strings.Contains(last.Content, "Work on y.") || !strings.Contains(last.Content, `"x"`) {
					t.Errorf("%s: y's last message = %+v, want the assignment naming the sibling as the fork call's result", mode, last)
				}
				caller := y.Messages[len(y.Messages)-2]
				if len(caller.ToolCalls) != 1 || caller.ToolCalls[0].Function.Name != "fork" || caller.ToolCalls[0].ID != last.ToolCallID {
					t.Errorf("%s: the message before the assignment = %+v, want the assistant's fork call", mode, caller)
				}
				var reads int
				for _, m := range y.Messages {
					for _, tc := range m.ToolCalls {
						if tc.Function.Name == "read_file" {
							reads++
						}
					}
				}
				if mode == "inherit" && reads != 1 {
					t.Errorf("inherit: %d read_file calls in y's history, want 1 (a.txt)", reads)
				}
				if mode == "compact" && reads != 0 {
					t.Errorf("compact: %d read_file calls in y's history, want 0", reads)
				}
			}
		})
	}
}

// TestHandoff checks that a hand-off target sees the whole transcript, tool
// traffic included, under its own system prompt and tools only.
func TestHandoff(t *testing.T) {
	res, db, ns := runFixture(t, fixture("handoff-chain"), nil)
	if res.Status != record.StatusOK {
		t.Fatalf("Status = %q: %s", res.Status, res.Error)
	}
	var llms []*record.Node
	for _, n := range ns {
		if n.Kind == record.KindLLM {
			llms = append(llms, n)
		}
	}
	// llm 2 is billing's first call, llm 4 refunds' first call
	billing, refunds := request(t, db, llms[1]), request(t, db, llms[3])
	if llms[1].Agent != "billing" || llms[3].Agent != "refunds" {
		t.Fatalf("agents of the llm nodes are wrong:\n%s", outline(ns))
	}
	for _, c := range []struct {
		req   openai.ChatCompletionRequest
		role  string
		tools []string
	}{
		{billing, "You are billing.", []string{"read_file", "transfer_to_refunds", "transfer_to_intake"}},
		{refunds, "You are refunds.", []string{"read_file", "transfer_to_intake"}},
	} {
		sys := 0
		for _, m := range c.req.Messages {
			if m.Role == "system" {
				sys++
			}
		}
		if sys != 1 || !strings.HasPrefix(c.req.Messages[0].Content, c.role) {
			t.Errorf("system messages = %d, first = %q; want one, %q", sys, c.req.Messages[0].Content, c.role)
		}
		if got := strings.Join(toolNames(c.req), ","); got != strings.Join(c.tools, ",") {
			t.Errorf("tools = %s, want %s", got, strings.Join(c.tools, ","))
		}
	}
	// refunds sees every earlier message: the task, intake's transfer call and
	// its result, billing's read and its result, billing's transfer and result.
	want := []string{"user", "assistant", "tool", "assistant", "tool", "assistant", "tool"}
	var got []string
	for _, m := range refunds.Messages[1:] {
		got = append(got, m.Role)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("refunds' transcript roles = %v, want %v", got, want)
	}
	if !strings.Contains(refunds.Messages[5].Content, "Invoices are issued") {
		t.Errorf("refunds does not see billing's read_file result: %q", refunds.Messages[5].Content)
	}
	// hand-off nodes follow their llm node, with from, to and reason
	var hs []*record.Node
	for _, n := range ns {
		if n.Kind == record.KindHandoff {
			hs = append(hs, n)
		}
	}
	if len(hs) != 2 || hs[0].Handoff.From != "intake" || hs[0].Handoff.To != "billing" || hs[1].Handoff.To != "refunds" ||
		hs[1].Handoff.Reason != "The customer asks for a refund of a duplicate charge." {
		t.Errorf("handoff nodes wrong:\n%s", outline(ns))
	}
	// the second user turn is answered by refunds, who still holds the trunk
	users := 0
	for _, n := range ns {
		if n.Kind == record.KindUser {
			users++
			if users == 2 && n.Agent != "refunds" {
				t.Errorf("second user turn recorded at agent %q, want refunds", n.Agent)
			}
		}
	}
	if users != 2 || res.Answer != "Refunds reach your account within five working days." {
		t.Errorf("users = %d, answer = %q", users, res.Answer)
	}
}

// TestDepthCap checks that at maxForkDepth the fork tool and the fork
// instructions are both withdrawn, and a fork call there is refused.
func TestDepthCap(t *testing.T) {
	res, db, ns := runFixture(t, fixture("nested-fork-depth-cap"), nil)
	if res.Status != record.StatusOK {
		t.Fatalf("Status = %q: %s", res.Status, res.Error)
	}
	forkText := "# Forking"
	for _, c := range []struct {
		branch  string
		depth   int
		canFork bool
	}{{"", 0, true}, {"docs", 1, true}, {"docs/guide", 2, false}} {
		n := first(t, ns, "llm in "+c.branch, llmIn(c.branch))
		req := request(t, db, n)
		hasTool := strings.Contains(strings.Join(toolNames(req), ","), "fork")
		hasText := strings.Contains(req.Messages[0].Content, forkText)
		if n.Depth != c.depth || hasTool != c.canFork || hasText != c.canFork {
			t.Errorf("%q: depth %d, fork tool %v, fork instructions %v; want depth %d and %v", c.branch, n.Depth, hasTool, hasText, c.depth, c.canFork)
		}
	}
	refused := first(t, ns, "refused fork", func(n *record.Node) bool {
		return n.Kind == record.KindTool && n.Tool.Name == "fork" && n.Branch == "docs/guide"
	})
	if refused.Status != record.StatusError || !strings.Contains(refused.Tool.Result, "maxForkDepth is 2") {
		t.Errorf("fork at the cap: status %q result %q, want an error naming maxForkDepth", refused.Status, refused.Tool.Result)
	}
	for _, n := range ns {
		if n.Kind == record.KindFork && n.Depth >= 2 {
			t.Errorf("a fork node was recorded at depth %d", n.Depth)
		}
	}
}

// TestInvalidCalls checks that every invalid call of DESIGN §4 becomes a tool
// result saying what was wrong, and the run goes on.
func TestInvalidCalls(t *testing.T) {
	res, db, ns := runFixture(t, filepath.Join("testdata", "invalid"), nil)
	if res.Status != record.StatusOK || res.Answer != "done" {
		t.Fatalf("Status = %q (%s), answer %q; want ok, done\n%s", res.Status, res.Error, res.Answer, outline(ns))
	}
	want := []struct {
		name, branch, says string
	}{
		{"read_file", "", "not valid JSON"},
		{"nosuch_tool", "", `unknown tool "nosuch_tool"`},
		{"fork", "", "belong inside each entry of `branches`"},
		{"fork", "", `asks for agent "lead"`},
		{"fork", "", "3 branches is too many"},
		{"transfer_to_nobody", "", "not a hand-off lead may make"},
		{"fork", "", "not a JSON object"},
		{"fork", "b", "maxForkDepth is 1"},
	}
	var got []*record.Node
	for _, n := range ns {
		if n.Kind == record.KindTool {
			got = append(got, n)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d tool nodes, want %d\n%s", len(got), len(want), outline(ns))
	}
	for i, w := range want {
		n := got[i]
		if n.Tool.Name != w.name || n.Branch != w.branch || n.Status != record.StatusError || !strings.Contains(n.Tool.Result, w.says) {
			t.Errorf("tool node %d = %s [%s] %s %q; want %s [%s] error containing %q", i, n.Tool.Name, n.Branch, n.Status, n.Tool.Result, w.name, w.branch, w.says)
		}
	}
	// the model read each refusal: the request after it holds it as a tool result
	llms := 0
	for _, n := range ns {
		if n.Kind != record.KindLLM || n.Branch != "" {
			continue
		}
		llms++
		if llms < 2 || llms > len(want) {
			continue
		}
		req := request(t, db, n)
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" || !strings.Contains(last.Content, want[llms-2].says) {
			t.Errorf("request %d ends with %+v, want the refusal %q", llms, last, want[llms-2].says)
		}
	}
	forks := 0
	for _, n := range ns {
		if n.Kind == record.KindFork {
			forks++
		}
	}
	if forks != 1 {
		t.Errorf("%d fork nodes, want 1 (only the valid call)", forks)
	}
}

// A run whose trunk fails on a problem in the script (an unusable reply, no
// reply left) reports ScriptError, so the CLI can call it an input error; a
// scripted `error:` (a provider failure) does not, nor does a broken branch
// the trunk survives.
func TestScriptError(t *testing.T) {
	const fork = "task: t\nconversations:\n  trunk:\n    - calls:\n        - fork:\n            context: none\n            branches:\n              - {name: notes, agent: checker, instructions: check}\n"
	tests := []struct {
		name        string
		script      string
		status      record.Status
		scriptError bool
	}{
		{"ok", fork + "    - say: done\n  notes:\n    - say: pass\n", record.StatusOK, false},
		{"broken branch", fork + "    - say: done\n  notes:\n    - sya: pass\n", record.StatusOK, false},
		{"unusable trunk reply", fork + "    - say: done\n      latency: soon\n  notes:\n    - say: pass\n", record.StatusError, true},
		{"trunk out of replies", fork + "  notes:\n    - say: pass\n", record.StatusError, true},
		{"provider failure", fork + "    - error: 503\n  notes:\n    - say: pass\n", record.StatusError, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "script.yaml")
			if err := os.WriteFile(path, []byte(tt.script), 0o644); err != nil {
				t.Fatal(err)
			}
			res, _, ns := runFixture(t, fixture("failing-branch"), func(c *runtime.Config) { c.Script = path })
			if res.Status != tt.status || res.ScriptError != tt.scriptError {
				t.Errorf("Status %q ScriptError %v (%s), want %q and %v\n%s", res.Status, res.ScriptError, res.Error, tt.status, tt.scriptError, outline(ns))
			}
			if tt.scriptError && !strings.Contains(res.Error, "script.yaml:") {
				t.Errorf("Error = %q, want the script line", res.Error)
			}
		})
	}
}

// The loop gives the scripted model each request's virtual start, so the
// first requests of sibling branches — sent at the same virtual moment —
// see only what their parent sent, never each other's prefix: in these
// fixtures they share the same cached count (us and apac would count eu's
// researcher prompt if the cache went by call order).
func TestCacheSiblings(t *testing.T) {
	for _, name := range []string{"fanout-compact", "inherit-same-agent", "nested-fork-depth-cap"} {
		t.Run(name, func(t *testing.T) {
			_, _, ns := runFixture(t, fixture(name), nil)
			first := map[int64][]*record.Node{} // fork seq -> first llm node of each branch
			seen := map[string]bool{}
			for _, n := range ns {
				key := fmt.Sprintf("%d/%s", n.ForkSeq, n.Branch)
				if n.Kind != record.KindLLM || n.ForkSeq == 0 || seen[key] {
					continue
				}
				seen[key] = true
				first[n.ForkSeq] = append(first[n.ForkSeq], n)
			}
			if len(first) == 0 {
				t.Fatal("no branches")
			}
			for fork, branches := range first {
				for _, n := range branches[1:] {
					if !n.Started.Equal(branches[0].Started) || n.LLM.Usage.Cached != branches[0].LLM.Usage.Cached {
						t.Errorf("fork n%d: branch %s starts %s with cached %d, branch %s starts %s with cached %d; want siblings at one moment to cache alike",
							fork, branches[0].Branch, branches[0].Started.Format(time.TimeOnly), branches[0].LLM.Usage.Cached,
							n.Branch, n.Started.Format(time.TimeOnly), n.LLM.Usage.Cached)
					}
				}
			}
		})
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}

// maxSteps ends a conversation exhausted (a budget, not a failure of the
// model call): the branch's join row, its final node and — on the trunk —
// the run read exhausted, and the run is recorded with source inspect.
func TestMaxSteps_Exhausted(t *testing.T) {
	const script = "task: t\nconversations:\n  trunk:\n    - calls:\n        - fork:\n            context: none\n            branches:\n              - {name: notes, agent: checker, instructions: check}\n" +
		"    - calls: [{read_file: {path: a.md}}]\n    - calls: [{read_file: {path: b.md}}]\n    - say: never\n" +
		"  notes:\n    - calls: [{read_file: {path: a.md}}]\n    - calls: [{read_file: {path: b.md}}]\n    - say: never\n"
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	res, db, ns := runFixture(t, fixture("failing-branch"), func(c *runtime.Config) { c.Script, c.MaxSteps = path, 2 })
	if res.Status != record.StatusExhausted || !strings.Contains(res.Error, "maxSteps (2") {
		t.Errorf("run: %q %q, want exhausted naming maxSteps\n%s", res.Status, res.Error, outline(ns))
	}
	var join *record.JoinBranch
	for _, n := range ns {
		if n.Kind == record.KindJoin {
			join = &n.Join.Branches[0]
		}
	}
	if join == nil || join.Status != record.StatusExhausted {
		t.Errorf("join row = %+v, want the branch exhausted", join)
	}
	run, err := db.LoadRun(context.Background(), res.RunID)
	if err != nil || run.Status != record.StatusExhausted || run.Source.Format != record.SourceInspect {
		t.Errorf("stored run = %+v, %v: want exhausted, source inspect", run, err)
	}
}

// A fork branch may not be named "trunk" (it named the root conversation,
// so the branch took the trunk's script replies and failed with a false
// "no entry trunk"), and a refused name is told what is wrong with it — not
// that ".." may hold only characters it holds (issue 12, item 13).
func TestFork_BranchNames(t *testing.T) {
	tests := []struct{ name, says string }{
		{"trunk", `branch name "trunk" is reserved: trunk is the run's root conversation`},
		{"..", `branch name ".." starts with '.'`},
		{"eu/fr", `branch name "eu/fr" holds /`},
		{"north america", `branch name "north america" holds a space`},
		{"ü", `branch name "ü" holds 'ü'`},
	}
	var script strings.Builder
	script.WriteString("task: t\nconversations:\n  trunk:\n")
	for _, tt := range tests {
		fmt.Fprintf(&script, "    - calls: [{fork: {context: none, branches: [{name: %q, agent: helper, instructions: x}]}}]\n", tt.name)
	}
	script.WriteString("    - say: done\n")
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(script.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, ns := runFixture(t, filepath.Join("testdata", "invalid"), func(c *runtime.Config) { c.Script = path })
	if res.Status != record.StatusOK {
		t.Fatalf("run %s: %s\n%s", res.Status, res.Error, outline(ns))
	}
	var results []string
	for _, n := range ns {
		if n.Kind == record.KindTool {
			results = append(results, n.Tool.Result)
		}
		if n.Kind == record.KindFork {
			t.Errorf("a fork node was recorded for a refused name: %s", outline([]*record.Node{n}))
		}
	}
	if len(results) != len(tests) {
		t.Fatalf("%d refusals, want %d\n%s", len(results), len(tests), outline(ns))
	}
	for i, tt := range tests {
		if !strings.Contains(results[i], tt.says) {
			t.Errorf("branch %q: result %q, want it to say %q", tt.name, results[i], tt.says)
		}
	}
}

// Each call a response made knows that response (CalledBy = its llm node),
// and the calls of one response run one at a time, so the run's graph has
// no parallel call group: nearmiss-fanout-parallel-response's three
// read_file calls of one response follow each other in time, and are
// drawn as the series they are.
func TestCalledBy_OneAtATime(t *testing.T) {
	_, db, ns := runFixture(t, fixture("nearmiss-fanout-parallel-response"), nil)
	var llm int64
	tools := 0
	var lastEnd time.Time
	for _, n := range ns {
		switch n.Kind {
		case record.KindLLM:
			llm = n.Seq
			if n.CalledBy != 0 {
				t.Errorf("n%d (llm) CalledBy %d, want 0", n.Seq, n.CalledBy)
			}
		case record.KindTool:
			tools++
			if n.CalledBy != llm || llm == 0 {
				t.Errorf("n%d (tool) CalledBy %d, want the llm node n%d before it\n%s", n.Seq, n.CalledBy, llm, outline(ns))
			}
			if n.Started.Before(lastEnd) {
				t.Errorf("n%d started %s before the call before it ended (%s): calls overlap", n.Seq, n.Started, lastEnd)
			}
			lastEnd = n.Ended
		default:
			if n.CalledBy != 0 {
				t.Errorf("n%d (%s) CalledBy %d, want 0", n.Seq, n.Kind, n.CalledBy)
			}
		}
	}
	if tools != 3 {
		t.Fatalf("%d tool nodes, want 3:\n%s", tools, outline(ns))
	}
	run, err := db.LoadRun(context.Background(), "testrun")
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Build(run, ns)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 0 {
		t.Errorf("our runtime's run has %d parallel call groups, want none (its calls run one at a time)", len(g.Groups))
	}
}
