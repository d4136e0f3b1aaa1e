// Package mcpserver is `inspect mcp` (DESIGN §17): a Model Context
// Protocol server, built on the official github.com/modelcontextprotocol/
// go-sdk, through which a coding agent reads recorded runs itself. Its
// tools list runs, draw a run's graph, audit a run, show one node, diff two
// runs, explain a rule and, only when the user started the server with
// --allow-ask, ask a recorded model call a question (that calls the
// provider and costs money).
//
// A tool validates its arguments into typed references (a run: latest, a
// hex id or prefix, FILE.db:RUN only for a file the user allowed at start;
// a node n<seq>; a rule id of the rule list; thresholds by name) and calls
// its Backend once: the one result gives both the text for the agent
// (rendered by the writers inspect's commands use: findings', diff's, the
// Mermaid chart's, sanitised) and the structured content (the structs of
// the documented JSON, docs/*-json.md). No argument ever reaches a command
// line, a path or a flag: a client cannot choose the database, the policy
// file, an output file or the provider.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/inspect-dev/inspect/ask"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/findings"
	auditreport "github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/graphjson"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/mermaid"
)

// Options configure the server.
type Options struct {
	// Version is inspect's version, sent to the client.
	Version string
	// AllowAsk adds the ask tool, which sends a recorded request with a
	// question to the provider.
	AllowAsk bool
	// AskEnv reads the environment the server started with, for the
	// provider keys and base URLs ask sends with (ANTHROPIC_API_KEY,
	// ANTHROPIC_BASE_URL, OPENAI_API_KEY, OPENAI_BASE_URL: the provider
	// is the run's own, see package ask; an unset base URL: the run's
	// recorded one, else the provider's public API); nil reads nothing.
	AskEnv func(string) string
	// AllowDB are the database files, besides the default one, whose runs
	// a client may name as FILE.db:RUN (inspect mcp --allow-db FILE), as
	// the user spelled them. They are only read: ask refuses their runs.
	AllowDB []string
	// Dir is the folder relative names in AllowDB and in a client's
	// FILE.db:RUN are compared from (the server's working folder).
	Dir string
	// Now is the clock list_runs' ages count back from; nil: time.Now.
	Now func() time.Time
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

// New returns the server: its tools read through b.
func New(b Backend, o Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "inspect", Title: "inspect: multi-agent run audits", Version: o.Version},
		&mcp.ServerOptions{Instructions: Instructions})
	if o.Now == nil {
		o.Now = time.Now
	}
	t := &tools{b: b, o: o, refs: newRefs(o.Dir, o.AllowDB)}
	runs := "Runs are latest (the default), a run's hex id or a unique prefix of one"
	if len(o.AllowDB) > 0 {
		runs += ", or FILE.db:RUN for " + strings.Join(o.AllowDB, ", ") + " (the files the user allowed; no other)"
	} else {
		runs += "; runs of other database files are refused (the user may allow one with inspect mcp --allow-db FILE)"
	}
	runs += ". Nothing is written; a wrong argument is an error that names it."
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)}
	mcp.AddTool(s, &mcp.Tool{Name: "list_runs", Annotations: readOnly, OutputSchema: outputSchema[RunsResult](),
		Description: "List recorded runs, newest first: id, start, status, agents, elapsed, tokens, task. Filters combine. Structured content: {runs: [...]} in the fields of `inspect runs --json`."},
		t.listRuns)
	mcp.AddTool(s, &mcp.Tool{Name: "graph", Annotations: readOnly, OutputSchema: outputSchema[graphjson.Graph](),
		Description: "Draw a run as a Mermaid flowchart with header comments (agents, tokens, branches and the slowest one, tool counts). Node ids n<seq> are what the other tools take. Structured content: the graph JSON (docs/graph-json.md). " + runs},
		t.graph)
	mcp.AddTool(s, &mcp.Tool{Name: "audit", Annotations: readOnly, OutputSchema: outputSchema[findings.Report](),
		Description: "Audit a run's topology: each finding with its rule, agent, evidence nodes, price (time, tokens, money with a price table), fix location and what the next run should show; grades per area; what every rule examined. Applies the policy inspect mcp was started with (the repository's .inspect.yaml). Structured content: the audit JSON (docs/audit-json.md). " + runs},
		t.audit)
	mcp.AddTool(s, &mcp.Tool{Name: "show_node", Annotations: readOnly, OutputSchema: outputSchema[NodeResult](),
		Description: "Show one node of a run in full: a model call's exact (or reconstructed) request with system prompt, tools and messages, its response and usage; a tool call's arguments and result; a fork's branches; a join's outcomes. Structured content: the node as the graph JSON has it, with a model call's request and response bodies as stored (request, response). " + runs},
		t.showNode)
	mcp.AddTool(s, &mcp.Tool{Name: "diff", Annotations: readOnly, OutputSchema: outputSchema[diff.Report](),
		Description: "Compare two runs: findings new, fixed and unchanged, whether each fixed finding's promised change shows, totals with deltas; both audited under the policy. Structured content: the diff JSON (docs/diff-json.md). " + runs},
		t.diff)
	mcp.AddTool(s, &mcp.Tool{Name: "explain_rule", Annotations: readOnly, OutputSchema: outputSchema[auditreport.RuleJSON](),
		Description: "Explain an audit rule: what it detects with the thresholds in force (and where each came from), how it prices a finding, where the fix goes. Structured content: the rule as `inspect audit --explain ID --format json`."},
		t.explain)
	if o.AllowAsk {
		mcp.AddTool(s, &mcp.Tool{Name: "ask", OutputSchema: outputSchema[AskResult](), Annotations: &mcp.ToolAnnotations{OpenWorldHint: boolPtr(true)},
			Description: "Ask a recorded model call (an llm node) a question: its exact recorded request is sent again to the provider the user configured, with the question appended and tool calls off, so the model explains the choice it made. Calls the provider with the user's key: it costs money. The answer is stored with the run (the only thing any tool writes). Runs of the default database only."},
			t.ask)
	}
	return s
}

func boolPtr(b bool) *bool { return &b }

type tools struct {
	b    Backend
	o    Options
	refs *refs
}

// RunArgs name a run.
type RunArgs struct {
	Run string `json:"run,omitempty" jsonschema:"the run: latest (the default), a run's hex id, or a unique prefix of one"`
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

// RunsResult is list_runs' structured content.
type RunsResult struct {
	Runs []RunSummary `json:"runs"`
}

func (t *tools) listRuns(ctx context.Context, _ *mcp.CallToolRequest, a ListArgs) (*mcp.CallToolResult, *RunsResult, error) {
	q, err := query(a, t.o.Now())
	if err != nil {
		return nil, nil, failed(err)
	}
	list, err := t.b.Runs(ctx, q)
	if err != nil {
		return nil, nil, failed(err)
	}
	runs := list.Runs
	if runs == nil {
		runs = []RunSummary{}
	}
	return text(runsText(list), list.Notes), &RunsResult{Runs: runs}, nil
}

// GraphArgs are graph's arguments.
type GraphArgs struct {
	RunArgs
	Full bool `json:"full,omitempty" jsonschema:"draw every node: no collapsing of repeated calls and wide forks (large runs get long)"`
}

func (t *tools) graph(ctx context.Context, _ *mcp.CallToolRequest, a GraphArgs) (*mcp.CallToolResult, *graphjson.Graph, error) {
	ref, err := t.refs.run("run", a.Run)
	if err != nil {
		return nil, nil, failed(err)
	}
	g, err := t.b.Graph(ctx, ref)
	if err != nil {
		return nil, nil, failed(err)
	}
	var b bytes.Buffer
	if err := (&mermaid.Config{Full: a.Full, Notes: report.Notes(g.Cache)}).Fprint(&b, g.Run); err != nil {
		return nil, nil, failed(err)
	}
	return text(b.String(), g.Notes), graphjson.New(g.Run), nil
}

// AuditArgs are audit's arguments.
type AuditArgs struct {
	RunArgs
	Set []string `json:"set,omitempty" jsonschema:"thresholds for this audit, NAME=VALUE (as inspect audit --set; explain_rule lists a rule's)"`
}

func (t *tools) audit(ctx context.Context, _ *mcp.CallToolRequest, a AuditArgs) (*mcp.CallToolResult, *findings.Report, error) {
	ref, err := t.refs.run("run", a.Run)
	if err != nil {
		return nil, nil, failed(err)
	}
	set, err := thresholds("set", a.Set)
	if err != nil {
		return nil, nil, failed(err)
	}
	rep, err := t.b.Audit(ctx, ref, set)
	if err != nil {
		return nil, nil, failed(err)
	}
	var b bytes.Buffer
	if err := auditreport.WriteText(&b, rep); err != nil {
		return nil, nil, failed(err)
	}
	return text(b.String(), nil), rep, nil
}

// NodeArgs name a node of a run.
type NodeArgs struct {
	RunArgs
	Node string `json:"node" jsonschema:"the node, n<seq> as graph and audit number them (n7)"`
}

func (t *tools) showNode(ctx context.Context, _ *mcp.CallToolRequest, a NodeArgs) (*mcp.CallToolResult, *NodeResult, error) {
	ref, err := t.refs.run("run", a.Run)
	if err != nil {
		return nil, nil, failed(err)
	}
	seq, err := node("node", a.Node)
	if err != nil {
		return nil, nil, failed(err)
	}
	n, err := t.b.Node(ctx, ref, seq)
	if err != nil {
		return nil, nil, failed(err)
	}
	return text(n.Text, nil), nodeResult(n), nil
}

// NodeResult is show_node's structured content: the node as the graph
// JSON has it and, for a model call, its stored request and response —
// JSON values as recorded (secrets redacted in the store), a body that
// is not JSON as a string; a body over maxText is left out and
// RequestCut or ResponseCut says how long it was.
type NodeResult struct {
	graphjson.Node
	// Request is the request the call sent (RequestExact) or the one an
	// importer rebuilt from the session, lacking RequestLacks.
	Request      any      `json:"request,omitempty" jsonschema:"an llm node's request body as stored: the system prompt, tools and messages sent"`
	RequestExact bool     `json:"request_exact,omitempty" jsonschema:"the request was recorded byte for byte (else rebuilt by an importer)"`
	RequestLacks []string `json:"request_lacks,omitempty" jsonschema:"what a rebuilt request lacks"`
	RequestCut   int      `json:"request_cut_bytes,omitempty" jsonschema:"the request's size when it was too large to include"`
	Response     any      `json:"response,omitempty" jsonschema:"an llm node's response body as stored"`
	ResponseCut  int      `json:"response_cut_bytes,omitempty" jsonschema:"the response's size when it was too large to include"`
}

// nodeResult is n's structured content.
func nodeResult(n *Node) *NodeResult {
	out := &NodeResult{}
	if n.JSON != nil {
		out.Node = *n.JSON
	}
	out.Request, out.RequestCut = body(n.Request)
	out.Response, out.ResponseCut = body(n.Response)
	if out.Request != nil || out.RequestCut > 0 {
		out.RequestExact, out.RequestLacks = n.Exact, n.Lacks
	}
	return out
}

// body is a stored body as a JSON value (a string when it is not JSON),
// or, over maxText, nothing and its length.
func body(b []byte) (any, int) {
	switch {
	case len(b) == 0:
		return nil, 0
	case len(b) > maxText:
		return nil, len(b)
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return termsafe.String(string(b)), 0
	}
	return v, 0
}

// DiffArgs name the two runs of a diff.
type DiffArgs struct {
	Base string `json:"base" jsonschema:"the base run: latest, a run's hex id, or a unique prefix of one"`
	New  string `json:"new" jsonschema:"the new run, the same way"`
}

func (t *tools) diff(ctx context.Context, _ *mcp.CallToolRequest, a DiffArgs) (*mcp.CallToolResult, *diff.Report, error) {
	base, err := t.refs.run("base", a.Base)
	if err != nil {
		return nil, nil, failed(err)
	}
	new, err := t.refs.run("new", a.New)
	if err != nil {
		return nil, nil, failed(err)
	}
	rep, err := t.b.Diff(ctx, base, new)
	if err != nil {
		return nil, nil, failed(err)
	}
	var b bytes.Buffer
	if err := diff.WriteMarkdown(&b, rep); err != nil {
		return nil, nil, failed(err)
	}
	return text(b.String(), nil), rep, nil
}

// RuleArgs name a rule.
type RuleArgs struct {
	Rule string `json:"rule" jsonschema:"the rule id, such as fanout.missed (the audit names each finding's)"`
}

func (t *tools) explain(ctx context.Context, _ *mcp.CallToolRequest, a RuleArgs) (*mcp.CallToolResult, *auditreport.RuleJSON, error) {
	r, err := rule("rule", a.Rule)
	if err != nil {
		return nil, nil, failed(err)
	}
	o, err := t.b.Options(ctx)
	if err != nil {
		return nil, nil, failed(err)
	}
	var txt bytes.Buffer
	if err := auditreport.WriteExplain(&txt, r, o); err != nil {
		return nil, nil, failed(err)
	}
	js := auditreport.ExplainJSON(r, o)
	return text(txt.String(), nil), &js, nil
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

func (t *tools) ask(ctx context.Context, _ *mcp.CallToolRequest, a AskArgs) (*mcp.CallToolResult, *AskResult, error) {
	ref, err := t.refs.run("run", a.Run)
	if err != nil {
		return nil, nil, failed(err)
	}
	if ref.DB != "" {
		return nil, nil, failed(argErrorf("run", "%s is a database the user allowed for reading; ask stores its answer with the run, so it asks only runs of the default database", ref.DB))
	}
	seq, err := node("node", a.Node)
	if err != nil {
		return nil, nil, failed(err)
	}
	target, err := t.b.AskTarget(ctx, ref, seq)
	if err != nil {
		return nil, nil, failed(err)
	}
	id := target.Run.ID
	plan, err := ask.NewPlan(ctx, target.Recording, target.Run, seq, ask.Options{Question: a.Question, Getenv: t.o.AskEnv,
		Hint: func(args ...string) string { return askHint(id, args) }})
	if err != nil {
		var unknown *ask.UnknownNodeError
		if errors.As(err, &unknown) {
			return nil, nil, failed(argErrorf("node", "run %s has no node n%d", id, seq))
		}
		return nil, nil, failed(err)
	}
	if env, ok := t.missingKey(plan.Provider); !ok {
		return nil, nil, failed(fmt.Errorf("%s is not set in the environment inspect mcp was started with, so n%d's request cannot be sent to %s: the user restarts inspect mcp with it set (any non-empty value for a local server); show_node n%d shows the request without sending it",
			env, seq, plan.Provider.Title, seq))
	}
	var answer, log bytes.Buffer
	asked, err := plan.Send(ctx, ask.SendOptions{Getenv: t.o.AskEnv, Out: &answer, Log: &log})
	if asked != nil { // an answer, or the part of one that arrived (Incomplete says so)
		if serr := target.Store(ctx, asked); serr != nil {
			return nil, nil, failed(fmt.Errorf("store the ask with run %s: %w", id, serr))
		}
	}
	if err != nil {
		return nil, nil, failed(askError(err))
	}
	return text(answer.String(), lines(log.String())), &AskResult{Run: id, Node: fmt.Sprintf("n%d", seq), Question: plan.Question,
		Answer: strings.TrimSpace(asked.Answer)}, nil
}

// missingKey names the provider's key variable and whether the server's
// environment holds it (or its bearer token).
func (t *tools) missingKey(p *ask.Provider) (string, bool) {
	env := p.KeyEnv
	if p.BearerEnv != "" {
		env += " (or " + p.BearerEnv + ")"
	}
	if t.o.AskEnv == nil {
		return env, false
	}
	return env, t.o.AskEnv(p.KeyEnv) != "" || (p.BearerEnv != "" && t.o.AskEnv(p.BearerEnv) != "")
}

// askHint is the advice of an ask error that names another call: the ask
// tool with its arguments, or, for what the tool does not offer (--model,
// --replay), the command line the user would run.
func askHint(run string, args []string) string {
	if len(args) == 1 {
		return fmt.Sprintf(`call ask with {"run": %q, "node": %q}`, run, args[0])
	}
	var flags []string
	for _, a := range args[1:] {
		if strings.HasPrefix(a, "--") {
			flags = append(flags, a)
		}
	}
	return "inspect ask " + run + " " + strings.Join(args, " ") + " in a shell (the ask tool has no " + strings.Join(flags, ", ") + ")"
}

// askError says what to do about a provider's error, in terms of what the
// user set when starting the server.
func askError(err error) error {
	var apiErr *ask.APIError
	var cut *ask.CutOffError
	switch {
	case errors.As(err, &cut):
		return fmt.Errorf("%v; what arrived is stored with the run, marked incomplete: ask again", cut)
	case errors.As(err, &apiErr) && apiErr.Unauthorized():
		return fmt.Errorf("%v: the provider refused the key inspect mcp was started with (ANTHROPIC_API_KEY or OPENAI_API_KEY, as the run's provider reads); the user must fix it", apiErr)
	case errors.As(err, &apiErr) && apiErr.ModelNotFound():
		return fmt.Errorf("%v: the provider does not serve model %q", apiErr, apiErr.Model)
	}
	return err
}

// failed is the tool error of err, its message sanitised and said in the
// terms of this server (mcpError): returned as a handler's error, the SDK
// answers it as a tool result with isError set and no structured content.
func failed(err error) error {
	return errors.New(termsafe.String(mcpError(err)))
}

// text is a tool's text: s, then its notes, sanitised and capped.
func text(s string, notes []string) *mcp.CallToolResult {
	if len(notes) > 0 {
		s += "\n" + strings.Join(notes, "\n")
	}
	s = termsafe.String(s)
	if len(s) > maxText {
		s = s[:maxText] + fmt.Sprintf("\n… cut here: %d more bytes (ask for less, e.g. one node with show_node)", len(s)-maxText)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// lines are the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
