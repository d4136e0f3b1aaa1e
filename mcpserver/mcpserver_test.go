package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graphjson"
)

// fake is a Backend that answers from its func fields and remembers each
// call with the typed arguments it was given; a method without a func
// fails the test.
type fake struct {
	t     *testing.T
	calls []string

	runs    func(RunQuery) (*RunList, error)
	audit   func(RunRef, []Threshold) (*findings.Report, error)
	node    func(RunRef, int64) (*Node, error)
	diff    func(base, new RunRef) (*diff.Report, error)
	options func() (*findings.Options, error)
}

func (f *fake) log(format string, a ...any) { f.calls = append(f.calls, fmt.Sprintf(format, a...)) }

func (f *fake) Runs(_ context.Context, q RunQuery) (*RunList, error) {
	f.log("Runs %+v", q)
	if f.runs == nil {
		f.t.Error("Runs called")
		return nil, errors.New("unexpected")
	}
	return f.runs(q)
}

func (f *fake) Graph(_ context.Context, run RunRef) (*Graph, error) {
	f.log("Graph %s", run)
	f.t.Error("Graph called")
	return nil, errors.New("unexpected")
}

func (f *fake) Audit(_ context.Context, run RunRef, set []Threshold) (*findings.Report, error) {
	f.log("Audit %s %v", run, set)
	if f.audit == nil {
		f.t.Error("Audit called")
		return nil, errors.New("unexpected")
	}
	return f.audit(run, set)
}

func (f *fake) Node(_ context.Context, run RunRef, seq int64) (*Node, error) {
	f.log("Node %s n%d", run, seq)
	if f.node == nil {
		f.t.Error("Node called")
		return nil, errors.New("unexpected")
	}
	return f.node(run, seq)
}

func (f *fake) Diff(_ context.Context, base, new RunRef) (*diff.Report, error) {
	f.log("Diff %s %s", base, new)
	if f.diff == nil {
		f.t.Error("Diff called")
		return nil, errors.New("unexpected")
	}
	return f.diff(base, new)
}

func (f *fake) Options(context.Context) (*findings.Options, error) {
	f.log("Options")
	if f.options == nil {
		return findings.NewOptions(rules.All), nil
	}
	return f.options()
}

func (f *fake) AskTarget(_ context.Context, run RunRef, seq int64) (*AskTarget, error) {
	f.log("AskTarget %s n%d", run, seq)
	f.t.Error("AskTarget called")
	return nil, errors.New("unexpected")
}

func connect(t *testing.T, b Backend, o Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := New(b, o).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.(*mcp.TextContent).Text)
	}
	return b.String(), res
}

// TestTools_Calls: each tool calls its Backend once with the typed
// arguments its input maps to; the text keeps the notes; list_runs'
// array is wrapped for structured content; a finding is not a failure; an
// error of the Backend is a tool error with its message.
func TestTools_Calls(t *testing.T) {
	f := &fake{t: t,
		runs: func(RunQuery) (*RunList, error) {
			return &RunList{Runs: []RunSummary{{ID: "abc", Status: "error", Started: "2025-05-01T14:00:00Z", Tasks: []string{"the task"}}},
				Notes: []string{"note: demo.db has schema v5"}}, nil
		},
		audit: func(RunRef, []Threshold) (*findings.Report, error) {
			return &findings.Report{Run: "abc", Findings: []findings.Finding{{Rule: "fork.uneven", Severity: findings.Warning}}}, nil
		},
		node: func(RunRef, int64) (*Node, error) {
			return nil, errors.New("run abc has no node n9 (it has n1..n4); nearest: n4 (final)")
		},
	}
	cs := connect(t, f, Options{})

	got, res := call(t, cs, "list_runs", map[string]any{"status": "error", "tag": "pr=1", "limit": 5})
	if !strings.HasPrefix(got, "ID   STARTED") || !strings.Contains(got, "abc  ") || !strings.HasSuffix(got, "the task\n\nnote: demo.db has schema v5") {
		t.Errorf("text = %q", got)
	}
	var listed struct {
		Runs []RunSummary `json:"runs"`
	}
	if b, _ := json.Marshal(res.StructuredContent); json.Unmarshal(b, &listed) != nil || len(listed.Runs) != 1 || listed.Runs[0].ID != "abc" {
		t.Errorf("structured = %s", b)
	}
	if _, res = call(t, cs, "audit", map[string]any{"set": []string{"uneven-ratio=3"}}); res.IsError { // a finding is not a failure
		t.Errorf("audit with a finding read as an error")
	}
	if got, res = call(t, cs, "show_node", map[string]any{"run": "abc", "node": "n9"}); !res.IsError || got != "run abc has no node n9 (it has n1..n4); nearest: n4 (final)" {
		t.Errorf("show_node error = %v %q", res.IsError, got)
	}
	want := []string{
		"Runs {Statuses:[error] Source: Agent: Grep: Since:0001-01-01 00:00:00 +0000 UTC Until:0001-01-01 00:00:00 +0000 UTC Tags:map[pr:1] Limit:5}",
		"Audit latest [uneven-ratio=3]",
		"Node abc n9",
	}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("calls = %q\nwant %q", f.calls, want)
	}
}

func TestText_Capped(t *testing.T) {
	big := strings.Repeat("x", maxText+10)
	cs := connect(t, &fake{t: t, node: func(RunRef, int64) (*Node, error) { return &Node{Text: big}, nil }}, Options{})
	got, _ := call(t, cs, "show_node", map[string]any{"node": "n1"})
	if len(got) > maxText+200 || !strings.HasSuffix(got, "cut here: 10 more bytes (ask for less, e.g. one node with show_node)") {
		t.Errorf("capped text ends %q (%d bytes)", got[len(got)-80:], len(got))
	}
}

// TestText_Sanitised: what a run recorded reaches the agent without
// terminal escapes, as it reaches a terminal.
func TestText_Sanitised(t *testing.T) {
	cs := connect(t, &fake{t: t, node: func(RunRef, int64) (*Node, error) {
		return &Node{Text: "answer \x1b]52;c;cHduZWQ=\x07 and \x1b[2J done", JSON: &graphjson.Node{ID: "n1"}}, nil
	}}, Options{})
	got, res := call(t, cs, "show_node", map[string]any{"node": "n1"})
	if strings.ContainsAny(got, "\x1b\x07") || !strings.Contains(got, "done") {
		t.Errorf("text = %q", got)
	}
	if b, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(b), `"id":"n1"`) {
		t.Errorf("structured = %s", b)
	}
}

// TestArgs_Refused: an argument that is not what it names (a run, a node,
// a rule, a threshold, a status, a time) is refused with its name first,
// and the Backend is never called; an argument is never a flag, a path or
// another database.
func TestArgs_Refused(t *testing.T) {
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"graph", map[string]any{"run": "-o/tmp/x.mmd"}, `run: no run matches "-o/tmp/x.mmd"`},
		{"graph", map[string]any{"run": "--db=other.db"}, `run: "--db=other.db" names database file --db=other.db, which inspect mcp was not started with`},
		{"audit", map[string]any{"run": "other.db:latest"}, `run: "other.db:latest" names database file other.db, which inspect mcp was not started with`},
		{"audit", map[string]any{"run": "zzzz"}, `run: no run matches "zzzz"`},
		{"audit", map[string]any{"set": []string{"-o/tmp/x"}}, `set: "-o/tmp/x" is not NAME=VALUE`},
		{"audit", map[string]any{"set": []string{"--config=evil.yaml"}}, `set: --config=evil.yaml: unknown threshold "--config"`},
		{"audit", map[string]any{"set": []string{"--db=x"}}, `set: --db=x: unknown threshold "--db"`},
		{"audit", map[string]any{"set": []string{"uneven-ratio=0"}}, "set: uneven-ratio must be at least"},
		{"show_node", map[string]any{"node": "--out=x"}, `node: "--out=x" is not a node reference`},
		{"show_node", map[string]any{"node": "n0"}, `node: "n0" is not a node reference: nodes are numbered from n1`},
		{"show_node", map[string]any{"node": ""}, "node: give the node"},
		{"diff", map[string]any{"base": "latest", "new": "/etc/x.db:latest"}, `new: "/etc/x.db:latest" names database file /etc/x.db`},
		{"diff", map[string]any{"base": "-o", "new": "latest"}, `base: no run matches "-o"`},
		{"explain_rule", map[string]any{"rule": "fanout.misses"}, `rule: no rule "fanout.misses"; the rules are: `},
		{"list_runs", map[string]any{"status": "ok,--db=x"}, `status: unknown status "--db=x"`},
		{"list_runs", map[string]any{"since": "-o/tmp/x"}, `since: "-o/tmp/x" is neither a date`},
		{"list_runs", map[string]any{"until": "yesterday"}, `until: "yesterday" is neither a date`},
		{"list_runs", map[string]any{"tag": "=x"}, `tag: "=x": give KEY=VALUE or KEY`},
	} {
		f := &fake{t: t}
		cs := connect(t, f, Options{})
		got, res := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s %v: error %v %q, want %q…", c.tool, c.args, res.IsError, got, c.want)
		}
		if len(f.calls) > 0 {
			t.Errorf("%s %v: the Backend was called: %q", c.tool, c.args, f.calls)
		}
	}
}

// TestArgs_Runs: what a run reference becomes; FILE.db:RUN only for a file
// the user allowed, spelled however the client likes, handed on as the
// user spelled it.
func TestArgs_Runs(t *testing.T) {
	r := newRefs("/srv/repo", []string{"ci/base.db", "/data/other.db"})
	for _, c := range []struct {
		in   string
		want RunRef
	}{
		{"", RunRef{Run: "latest"}},
		{" latest ", RunRef{Run: "latest"}},
		{"7F3A", RunRef{Run: "7f3a"}},
		{"ci/base.db:latest", RunRef{DB: "ci/base.db", Run: "latest"}},
		{"./ci/base.db:7f3a", RunRef{DB: "ci/base.db", Run: "7f3a"}},
		{"/srv/repo/ci/base.db", RunRef{DB: "ci/base.db", Run: "latest"}},
		{"../../data/other.db:", RunRef{DB: "/data/other.db", Run: "latest"}},
	} {
		got, err := r.run("run", c.in)
		if err != nil || got != c.want {
			t.Errorf("run(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"ci/other.db:latest", "base.db:latest", "ci/base.db:-o/x", "ci/base.db:--db=x.db", "n7", "latest ; rm", "7f3a.."} {
		if got, err := r.run("run", bad); err == nil {
			t.Errorf("run(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestAsk_AllowedDBRefused: a database allowed for reading is never where
// an ask is stored.
func TestAsk_AllowedDBRefused(t *testing.T) {
	f := &fake{t: t}
	cs := connect(t, f, Options{AllowAsk: true, AllowDB: []string{"base.db"}, Dir: "/repo"})
	got, res := call(t, cs, "ask", map[string]any{"run": "base.db:latest", "node": "n4"})
	if !res.IsError || !strings.HasPrefix(got, "run: base.db is a database the user allowed for reading") || len(f.calls) > 0 {
		t.Errorf("ask on an allowed database: %v %q %q", res.IsError, got, f.calls)
	}
}

// TestDescriptions_SayWhatRunsMayBe: the tools that take a run say whether
// other database files are refused or which are allowed.
func TestDescriptions_SayWhatRunsMayBe(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "runs of other database files are refused (the user may allow one with inspect mcp --allow-db FILE)"},
		{Options{AllowDB: []string{"ci/base.db"}}, "or FILE.db:RUN for ci/base.db (the files the user allowed; no other)"},
	} {
		cs := connect(t, &fake{t: t}, c.o)
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range list.Tools {
			takesRun := tool.Name != "list_runs" && tool.Name != "explain_rule"
			if takesRun != strings.Contains(tool.Description, c.want) {
				t.Errorf("%s (%+v): description %q; want it to say %q: %v", tool.Name, c.o.AllowDB, tool.Description, c.want, takesRun)
			}
		}
	}
}
