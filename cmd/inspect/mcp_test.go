package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inspect-dev/inspect/ask/asktest"
)

// mcpSession starts the built inspect binary as `inspect mcp ARGS` in a
// process of its own, in folder dir with env added, and connects the
// official go-sdk client to it over stdio.
func mcpSession(t *testing.T, dir string, env []string, args ...string) *mcp.ClientSession {
	t.Helper()
	bin := builtInspect(t)
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "OPENAI_API_KEY=", "OPENAI_BASE_URL="), env...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	client := mcp.NewClient(&mcp.Implementation{Name: "inspect-test-client", Version: "1.0.0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to inspect mcp: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// callTool calls a tool and returns its text and its structured content
// re-read into v (when v is not nil).
func callTool(t *testing.T, s *mcp.ClientSession, name string, args map[string]any, v any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s %v: %v", name, args, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if v != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil || res.StructuredContent == nil {
			t.Fatalf("%s: no structured content (%v)", name, err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return text.String(), res.IsError
}

// TestMCP_Client drives `inspect mcp` with the official MCP Go SDK's client
// in another process: initialize, list the tools, call each one on two
// recorded runs (the repository's .inspect.yaml applied), including ask
// against an OpenAI-compatible server on 127.0.0.1, and errors an agent
// can act on.
func TestMCP_Client(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the inspect binary")
	}
	f, _, _ := testFactory(t)
	for i := 0; i < 2; i++ {
		if _, errOut, code := inspectRun(t, f, "demo"); code != ExitOK {
			t.Fatalf("demo: exit %d: %s", code, errOut)
		}
	}
	runs := runsJSON(t, f)
	older, newer := runs[1].ID, runs[0].ID
	wd, _ := f.Getwd()
	writePolicy(t, f, "prices:\n  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}\n")
	srv := asktest.New(t, askTestKey)
	answer := "I read the regions one by one because nothing told me they were independent."
	srv.Register("question", asktest.ToolChoiceNone, asktest.Answer(asktest.Reply{Content: answer}))

	s := mcpSession(t, wd, []string{"OPENAI_API_KEY=" + askTestKey, "OPENAI_BASE_URL=" + srv.URL}, "--db", f.DBPath, "--allow-ask")
	init := s.InitializeResult()
	if init.ServerInfo == nil || init.ServerInfo.Name != "inspect" || !strings.Contains(init.Instructions, "list_runs") || init.Capabilities.Tools == nil {
		t.Errorf("initialize = %+v", init)
	}
	list, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or an input schema", tool.Name)
		}
	}
	sort.Strings(names)
	if got, want := strings.Join(names, " "), "ask audit diff explain_rule graph list_runs show_node"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}

	var listed struct {
		Runs []runJSON `json:"runs"`
	}
	text, isErr := callTool(t, s, "list_runs", map[string]any{}, &listed)
	if isErr || !strings.Contains(text, newer) || !strings.Contains(text, older) || len(listed.Runs) != 2 || listed.Runs[0].ID != newer {
		t.Errorf("list_runs: %v %q %+v", isErr, text, listed)
	}
	callTool(t, s, "list_runs", map[string]any{"limit": 1, "agent": "writer"}, &listed)
	if len(listed.Runs) != 1 {
		t.Errorf("list_runs limit 1: %+v", listed.Runs)
	}

	var g struct {
		Run struct {
			ID string `json:"id"`
		} `json:"run"`
		Nodes []struct {
			ID string `json:"id"`
		} `json:"nodes"`
	}
	text, isErr = callTool(t, s, "graph", map[string]any{"run": older}, &g)
	if isErr || !strings.HasPrefix(text, "%% run "+older) || !strings.Contains(text, "flowchart TD") || g.Run.ID != older || len(g.Nodes) == 0 {
		t.Errorf("graph: %v %q %+v", isErr, text, g.Run)
	}

	var rep struct {
		Run      string `json:"run"`
		Findings []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
		Money *struct {
			Currency string `json:"currency"`
		} `json:"money"`
	}
	text, isErr = callTool(t, s, "audit", map[string]any{}, &rep)
	if isErr || !strings.Contains(text, "fanout.missed") || !strings.Contains(text, "cost: $") || rep.Run != newer || len(rep.Findings) == 0 || rep.Money == nil {
		t.Errorf("audit: %v %q %+v", isErr, text, rep)
	}
	text, _ = callTool(t, s, "audit", map[string]any{"set": []string{"uneven-ratio=20"}}, &rep)
	if !strings.Contains(text, "fork.uneven: clear") {
		t.Errorf("audit with set: %q", text)
	}

	var node struct {
		ID   string `json:"id"`
		Kind string `json:"kind"`
	}
	text, isErr = callTool(t, s, "show_node", map[string]any{"node": "n2"}, &node)
	if isErr || !strings.Contains(text, "n2") || !strings.Contains(text, "request") || node.ID != "n2" || node.Kind != "llm" {
		t.Errorf("show_node: %v %q %+v", isErr, text, node)
	}

	var d struct {
		Base struct {
			Run string `json:"run"`
		} `json:"base"`
		Findings struct {
			Unchanged []json.RawMessage `json:"unchanged"`
		} `json:"findings"`
	}
	text, isErr = callTool(t, s, "diff", map[string]any{"base": older, "new": newer}, &d)
	if isErr || !strings.Contains(text, "# inspect diff") || d.Base.Run != older || len(d.Findings.Unchanged) == 0 {
		t.Errorf("diff: %v %q %+v", isErr, text, d)
	}

	var rule struct {
		ID         string `json:"id"`
		Thresholds []struct {
			Source string `json:"source"`
		} `json:"thresholds"`
	}
	text, isErr = callTool(t, s, "explain_rule", map[string]any{"rule": "fork.uneven"}, &rule)
	if isErr || !strings.Contains(text, "uneven division") || rule.ID != "fork.uneven" || len(rule.Thresholds) != 2 || rule.Thresholds[0].Source != "default" {
		t.Errorf("explain_rule: %v %q %+v", isErr, text, rule)
	}

	var asked struct {
		Answer string `json:"answer"`
		Node   string `json:"node"`
	}
	text, isErr = callTool(t, s, "ask", map[string]any{"node": "n4", "question": "Why one by one?"}, &asked)
	if isErr || !strings.Contains(text, answer) || asked.Answer != answer || asked.Node != "n4" {
		t.Errorf("ask: %v %q %+v", isErr, text, asked)
	}
	srv.Verify(t)

	// errors an agent can act on: the message says what was wrong
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"show_node", map[string]any{"node": "n999"}, "no node n999"},
		{"audit", map[string]any{"run": "zzzz"}, `no run matches "zzzz"`},
		{"explain_rule", map[string]any{"rule": "fanout.misses"}, `no rule "fanout.misses"`},
		{"audit", map[string]any{"set": []string{"uneven-ratio=0"}}, "uneven-ratio must be at least"},
	} {
		if text, isErr := callTool(t, s, c.tool, c.args, nil); !isErr || !strings.Contains(text, c.want) {
			t.Errorf("%s %v: error %v, text %q; want an error saying %q", c.tool, c.args, isErr, text, c.want)
		}
	}

	// without --allow-ask there is no ask tool
	plain := mcpSession(t, wd, nil, "--db", f.DBPath)
	list, err = plain.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "ask" {
			t.Error("ask offered without --allow-ask")
		}
	}
	if _, err := plain.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"node": "n4"}}); err == nil {
		t.Error("ask answered without --allow-ask")
	}
	if _, err := os.Stat(filepath.Join(wd, ".inspect.yaml")); err != nil {
		t.Fatal(err)
	}
}
