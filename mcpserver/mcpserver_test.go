package mcpserver

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// recorder is a Runner that answers from a table and remembers the
// command lines it was given.
type recorder struct {
	calls   [][]string
	answers map[string][3]any // joined args -> stdout, stderr, code
}

func (r *recorder) run(_ context.Context, args []string) (string, string, int) {
	r.calls = append(r.calls, args)
	a, ok := r.answers[strings.Join(args, " ")]
	if !ok {
		return "", "inspect: unexpected command", 2
	}
	return a[0].(string), a[1].(string), a[2].(int)
}

func connect(t *testing.T, run Runner, o Options) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	if _, err := New(run, o).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestTools_CommandLines: each tool runs the inspect command of its name
// with the flags its arguments map to; the text drops next:/try: hints and
// keeps notes; an array is wrapped for structured content; a usage error
// is a tool error with inspect's own message.
func TestTools_CommandLines(t *testing.T) {
	r := &recorder{answers: map[string][3]any{
		"runs --limit 5 --status error --tag pr=1":        {"ID  STATUS\nabc error\n", "note: demo.db has schema v5\nnext: inspect graph abc\n", 0},
		"runs --limit 5 --status error --tag pr=1 --json": {`[{"id":"abc"}]`, "", 0},
		"audit latest --set uneven-ratio=3":               {"inspect audit · run abc\n", "", 1},
		"audit latest --set uneven-ratio=3 --format json": {`{"run":"abc"}`, "", 1},
		"show abc n9": {"", "inspect: run abc has no node n9 (it has n1..n4); nearest: n4 (final)\ntry: inspect runs\n", 2},
	}}
	cs := connect(t, r.run, Options{})
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_runs", Arguments: map[string]any{"status": "error", "tag": "pr=1", "limit": 5}})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != "ID  STATUS\nabc error\n\nnote: demo.db has schema v5" {
		t.Errorf("text = %q", got)
	}
	if b, _ := json.Marshal(res.StructuredContent); string(b) != `{"runs":[{"id":"abc"}]}` {
		t.Errorf("structured = %s", b)
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "audit", Arguments: map[string]any{"set": []string{"uneven-ratio=3"}}})
	if res.IsError { // exit 1 is findings over a threshold, not a failure
		t.Errorf("audit exit 1 read as an error")
	}
	res, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "show_node", Arguments: map[string]any{"run": "abc", "node": "n9"}})
	if !res.IsError || res.Content[0].(*mcp.TextContent).Text != "run abc has no node n9 (it has n1..n4); nearest: n4 (final)\ntry: inspect runs" {
		t.Errorf("show_node error = %+v %q", res.IsError, res.Content[0].(*mcp.TextContent).Text)
	}
	want := [][]string{
		{"runs", "--limit", "5", "--status", "error", "--tag", "pr=1"}, {"runs", "--limit", "5", "--status", "error", "--tag", "pr=1", "--json"},
		{"audit", "latest", "--set", "uneven-ratio=3"}, {"audit", "latest", "--set", "uneven-ratio=3", "--format", "json"},
		{"show", "abc", "n9"},
	}
	if !reflect.DeepEqual(r.calls, want) {
		t.Errorf("command lines = %q\nwant %q", r.calls, want)
	}
}

func TestText_Capped(t *testing.T) {
	big := strings.Repeat("x", maxText+10)
	cs := connect(t, func(context.Context, []string) (string, string, int) { return big, "", 0 }, Options{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "explain_rule", Arguments: map[string]any{"rule": "r"}})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Content[0].(*mcp.TextContent).Text
	if len(got) > maxText+200 || !strings.HasSuffix(got, "cut here: 10 more bytes (ask for less, e.g. one node with show_node)") {
		t.Errorf("capped text ends %q (%d bytes)", got[len(got)-80:], len(got))
	}
}
