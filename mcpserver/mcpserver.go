// Package mcpserver is `inspect mcp` (DESIGN §17): a Model Context
// Protocol server, built on the official github.com/modelcontextprotocol/
// go-sdk, through which a coding agent reads recorded runs itself. Its
// tools list runs, draw a run's graph, audit a run, show one node, diff two
// runs, explain a rule and, only when the user started the server with
// --allow-ask, ask a recorded model call a question (that calls the
// provider and costs money).
//
// Every tool runs one of inspect's own commands through a Runner, so an
// agent reads exactly what a person reads: the text the command prints
// (plain, sanitised, with the team's .inspect.yaml applied) as the tool's
// content, and the command's JSON (docs/*-json.md) as its structured
// content. The package holds no inspect logic of its own.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Runner runs one inspect command line (the arguments after "inspect") and
// returns what it wrote to stdout and stderr and its exit code (DESIGN
// §11: 0 ok, 1 over a threshold, 2 a usage error, 3 inspect failed).
type Runner func(ctx context.Context, args []string) (stdout, stderr string, code int)

// Options configure the server.
type Options struct {
	// Version is inspect's version, sent to the client.
	Version string
	// AllowAsk adds the ask tool, which sends a recorded request with a
	// question to the provider.
	AllowAsk bool
}

// maxText bounds a tool's text: a whole request body can be large, and an
// agent's context is not.
const maxText = 200 << 10

// Instructions are sent to the client at initialisation: how an agent
// should go about a run (the long form is docs/agents.md).
const Instructions = `inspect records multi-agent LLM runs and audits their topology.
To look at a run: list_runs (newest first; "latest" names the newest), then
audit (findings with evidence nodes n<seq>, price, fix location and what the
next run should show) and graph (Mermaid: forks as subgraphs, the slowest
branch marked). show_node prints one node in full, its exact request
included; diff compares two runs (new, fixed and unchanged findings,
totals). explain_rule says what a rule detects and how it is priced. A fix
goes where the finding says: a line of agents.yaml or of an agent's prompt
file. Costs are computed from the recording; a cache effect is never
measured unless the provider reported cached tokens.`

// New returns the server: its tools call run.
func New(run Runner, o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "inspect", Title: "inspect: multi-agent run audits", Version: o.Version},
		&mcp.ServerOptions{Instructions: Instructions})
	t := &tools{run: run}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "list_runs", Annotations: readOnly,
		Description: "List recorded runs, newest first: id, start, status, agents, elapsed, tokens, task. Filters combine. Structured content: {runs: [...]} as `inspect runs --json`."},
		t.listRuns)
	mcp.AddTool(s, &mcp.Tool{Name: "graph", Annotations: readOnly,
		Description: "Draw a run as a Mermaid flowchart with header comments (agents, tokens, branches and the slowest one, tool counts). Node ids n<seq> are what the other tools take. Structured content: the graph JSON (docs/graph-json.md)."},
		t.graph)
	mcp.AddTool(s, &mcp.Tool{Name: "audit", Annotations: readOnly,
		Description: "Audit a run's topology: each finding with its rule, agent, evidence nodes, price (time, tokens, money with a price table), fix location and what the next run should show; grades per area; what every rule examined. Applies the repository's .inspect.yaml. Structured content: the audit JSON (docs/audit-json.md)."},
		t.audit)
	mcp.AddTool(s, &mcp.Tool{Name: "show_node", Annotations: readOnly,
		Description: "Show one node of a run in full: a model call's exact (or reconstructed) request with system prompt, tools and messages, its response and usage; a tool call's arguments and result; a fork's branches; a join's outcomes. Structured content: the node as the graph JSON has it."},
		t.showNode)
	mcp.AddTool(s, &mcp.Tool{Name: "diff", Annotations: readOnly,
		Description: "Compare two runs (each a run reference, optionally FILE.db:RUN): findings new, fixed and unchanged, whether each fixed finding's promised change shows, totals with deltas. Structured content: the diff JSON (docs/diff-json.md)."},
		t.diff)
	mcp.AddTool(s, &mcp.Tool{Name: "explain_rule", Annotations: readOnly,
		Description: "Explain an audit rule: what it detects with the thresholds in force (and where each came from), how it prices a finding, where the fix goes. Structured content: the rule as `inspect audit --explain ID --format json`."},
		t.explain)
	if o.AllowAsk {
		mcp.AddTool(s, &mcp.Tool{Name: "ask", Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true)},
			Description: "Ask a recorded model call (an llm node) a question: its exact recorded request is sent again to the provider with the question appended and tool calls off, so the model explains the choice it made. Calls the provider with the user's key: it costs money. The answer is stored with the run."},
			t.ask)
	}
	return s
}

func boolPtr(b bool) *bool { return &b }

type tools struct{ run Runner }

// RunArgs name a run.
type RunArgs struct {
	Run string `json:"run,omitempty" jsonschema:"the run: an id, a unique prefix of one, or latest (the default); FILE.db:RUN for another database"`
}

func (a RunArgs) ref() string {
	if strings.TrimSpace(a.Run) == "" {
		return "latest"
	}
	return a.Run
}

// ListArgs are list_runs' filters.
type ListArgs struct {
	Status string `json:"status,omitempty" jsonschema:"only runs with these statuses, comma-separated: ok, error, exhausted, cancelled, interrupted, running"`
	Source string `json:"source,omitempty" jsonschema:"only runs from this source: inspect, or an import format such as claude-code, codex, otlp"`
	Agent  string `json:"agent,omitempty" jsonschema:"only runs in which this agent took part"`
	Since  string `json:"since,omitempty" jsonschema:"only runs started at or after this: a date 2025-05-01, an RFC 3339 time, or an age such as 7d or 36h"`
	Until  string `json:"until,omitempty" jsonschema:"only runs started before this"`
	Grep   string `json:"grep,omitempty" jsonschema:"only runs whose id, project, tasks or tags contain this text"`
	Tag    string `json:"tag,omitempty" jsonschema:"only runs with this tag: KEY=VALUE or KEY"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many runs (default 20)"`
}

func (t *tools) listRuns(ctx context.Context, _ *mcp.CallToolRequest, a ListArgs) (*mcp.CallToolResult, any, error) {
	limit := a.Limit
	if limit <= 0 {
		limit = 20
	}
	args := []string{"runs", "--limit", fmt.Sprint(limit)}
	for _, f := range []struct{ flag, v string }{{"--status", a.Status}, {"--source", a.Source}, {"--agent", a.Agent},
		{"--since", a.Since}, {"--until", a.Until}, {"--grep", a.Grep}, {"--tag", a.Tag}} {
		if f.v != "" {
			args = append(args, f.flag, f.v)
		}
	}
	return t.call(ctx, args, append(append([]string(nil), args...), "--json"), "runs")
}

// GraphArgs are graph's arguments.
type GraphArgs struct {
	RunArgs
	Full bool `json:"full,omitempty" jsonschema:"draw every node: no collapsing of repeated calls and wide forks (large runs get long)"`
}

func (t *tools) graph(ctx context.Context, _ *mcp.CallToolRequest, a GraphArgs) (*mcp.CallToolResult, any, error) {
	args := []string{"graph", a.ref()}
	if a.Full {
		args = append(args, "--full")
	}
	return t.call(ctx, args, append(append([]string(nil), args...), "--format", "json"), "")
}

// AuditArgs are audit's arguments.
type AuditArgs struct {
	RunArgs
	Set []string `json:"set,omitempty" jsonschema:"thresholds for this audit, NAME=VALUE (as inspect audit --set; explain_rule lists a rule's)"`
}

func (t *tools) audit(ctx context.Context, _ *mcp.CallToolRequest, a AuditArgs) (*mcp.CallToolResult, any, error) {
	args := []string{"audit", a.ref()}
	for _, kv := range a.Set {
		args = append(args, "--set", kv)
	}
	return t.call(ctx, args, append(append([]string(nil), args...), "--format", "json"), "")
}

// NodeArgs name a node of a run.
type NodeArgs struct {
	RunArgs
	Node string `json:"node" jsonschema:"the node, n<seq> as graph and audit number them (n7)"`
}

func (t *tools) showNode(ctx context.Context, _ *mcp.CallToolRequest, a NodeArgs) (*mcp.CallToolResult, any, error) {
	res, _, err := t.call(ctx, []string{"show", a.ref(), a.Node}, nil, "")
	if err != nil || res.IsError {
		return res, nil, err
	}
	out, _, code := t.run(ctx, []string{"graph", a.ref(), "--full", "--format", "json"})
	if code != 0 {
		return res, nil, nil
	}
	var g struct {
		Nodes []json.RawMessage `json:"nodes"`
	}
	if json.Unmarshal([]byte(out), &g) != nil {
		return res, nil, nil
	}
	for _, raw := range g.Nodes {
		var n struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(raw, &n) == nil && n.ID == strings.TrimSpace(a.Node) {
			return res, raw, nil
		}
	}
	return res, nil, nil
}

// DiffArgs name the two runs of a diff.
type DiffArgs struct {
	Base string `json:"base" jsonschema:"the base run: an id, a prefix, latest, or FILE.db:RUN"`
	New  string `json:"new" jsonschema:"the new run, the same way"`
}

func (t *tools) diff(ctx context.Context, _ *mcp.CallToolRequest, a DiffArgs) (*mcp.CallToolResult, any, error) {
	args := []string{"diff", a.Base, a.New}
	return t.call(ctx, append(append([]string(nil), args...), "--format", "markdown"), append(append([]string(nil), args...), "--format", "json"), "")
}

// RuleArgs name a rule.
type RuleArgs struct {
	Rule string `json:"rule" jsonschema:"the rule id, such as fanout.missed (the audit names each finding's)"`
}

func (t *tools) explain(ctx context.Context, _ *mcp.CallToolRequest, a RuleArgs) (*mcp.CallToolResult, any, error) {
	return t.call(ctx, []string{"audit", "--explain", a.Rule}, []string{"audit", "--explain", a.Rule, "--format", "json"}, "")
}

// AskArgs are ask's arguments.
type AskArgs struct {
	NodeArgs
	Question string `json:"question,omitempty" jsonschema:"the question for the model; default: why it chose what it called"`
}

// AskResult is ask's structured content.
type AskResult struct {
	Run      string `json:"run"`
	Node     string `json:"node"`
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

func (t *tools) ask(ctx context.Context, _ *mcp.CallToolRequest, a AskArgs) (*mcp.CallToolResult, any, error) {
	args := []string{"ask", a.ref(), a.Node}
	if a.Question != "" {
		args = append(args, a.Question)
	}
	res, answer := t.text(ctx, args)
	if res.IsError {
		return res, nil, nil
	}
	return res, AskResult{Run: a.ref(), Node: a.Node, Question: a.Question, Answer: strings.TrimSpace(answer)}, nil
}

// call runs textArgs for the tool's text and, when jsonArgs is given,
// jsonArgs for its structured content (under key wrap when set: a JSON
// array is wrapped in an object). A usage error or a failure of inspect
// is a tool error whose text says what was wrong and what to do.
func (t *tools) call(ctx context.Context, textArgs, jsonArgs []string, wrap string) (*mcp.CallToolResult, any, error) {
	res, _ := t.text(ctx, textArgs)
	if res.IsError || jsonArgs == nil {
		return res, nil, nil
	}
	jout, _, jcode := t.run(ctx, jsonArgs)
	if jcode >= 2 || !json.Valid([]byte(jout)) {
		return res, nil, nil
	}
	if wrap != "" {
		return res, map[string]json.RawMessage{wrap: json.RawMessage(jout)}, nil
	}
	return res, json.RawMessage(jout), nil
}

// text runs args and returns the tool result of its text (stdout, then
// the notes of stderr; an error result with stderr's message when inspect
// refused or failed) and stdout alone.
func (t *tools) text(ctx context.Context, args []string) (*mcp.CallToolResult, string) {
	out, errOut, code := t.run(ctx, args)
	if code >= 2 {
		msg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(errOut), "inspect: "))
		if msg == "" {
			msg = fmt.Sprintf("inspect %s failed (exit %d)", strings.Join(args, " "), code)
		}
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: msg}}}, out
	}
	text := out
	if notes := notes(errOut); notes != "" {
		text += "\n" + notes
	}
	if len(text) > maxText {
		text = text[:maxText] + fmt.Sprintf("\n… cut here: %d more bytes (ask for less, e.g. one node with show_node)", len(text)-maxText)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out
}

// notes keeps what a command said on stderr that an agent needs (notes,
// warnings, what was left out), without the next:/try: lines, which name
// shell commands rather than tools.
func notes(stderr string) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l == "" || strings.HasPrefix(l, "next: ") || strings.HasPrefix(l, "try: ") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}
