package rules_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store"
)

// realSession is one real session the project holds: a file of the
// shared transcripts (real users' sessions) or the main session file a
// real CLI left in the agents harness (testdata/agents).
type realSession struct {
	name string // "claude-code/tool_heavy", "harness/claude/compaction"
	path string
}

// realSessions lists every real session: the shared transcripts' Claude
// Code, Kimi CLI and Kimi Code sessions, and each harness scenario of
// Claude Code, Codex and Gemini CLI.
func realSessions(t *testing.T) []realSession {
	t.Helper()
	root := importerstest.Transcripts(t)
	out := []realSession{
		{"claude-code/tool_heavy", filepath.Join(root, "claude-code", "tool_heavy.jsonl")},
		{"claude-code/ae4a77f8-excerpt", filepath.Join(root, "claude-code", "ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl")},
		{"kimi-cli/with-subagent-collapsed", filepath.Join(root, "kimi-cli", "with-subagent-collapsed")},
		{"kimi-cli/with-tool-calls", filepath.Join(root, "kimi-cli", "with-tool-calls")},
		{"kimi-code/sample-main", filepath.Join(root, "kimi-code", "sample-main")},
	}
	entire, _ := filepath.Glob(filepath.Join(root, "claude-code", "entire", "*", "*", "*", "0", "full.jsonl"))
	if len(entire) < 3 {
		t.Fatalf("claude-code/entire: %d sessions, want the three with truth.json", len(entire))
	}
	for _, p := range entire {
		rel, _ := filepath.Rel(filepath.Join(root, "claude-code", "entire"), p)
		out = append(out, realSession{"claude-code/entire/" + strings.SplitN(filepath.ToSlash(rel), "/", 2)[0], p})
	}
	// The traces the real SDKs and frameworks wrote against the scripted
	// model (importers/*/testdata/gen*: the Agents SDK, the AI SDK,
	// LangGraph under OpenInference and OpenLLMetry, Mastra), and the
	// Python SDK's export shape (python-export, by hand).
	for _, tr := range []string{
		"openaiagents/testdata/failure.jsonl",
		"openaiagents/testdata/handoff.jsonl",
		"openaiagents/testdata/handoff-loop-max-turns.jsonl",
		"openaiagents/testdata/multiple-handoffs.jsonl",
		"openaiagents/testdata/parallel-agents-as-tools.jsonl",
		"openaiagents/testdata/python-export.jsonl",
		"openaiagents/testdata/serial-loop.jsonl",
		"otlp/testdata/aisdk.otlp.jsonl",
		"otlp/testdata/aisdk7-legacy.otlp.jsonl",
		"otlp/testdata/langgraph-mapreduce.otlp.jsonl",
		"otlp/testdata/langgraph-supervisor.otlp.jsonl",
		"otlp/testdata/mastra-workflow.otlp.jsonl",
		"otlp/testdata/openllmetry-langgraph-supervisor.otlp.jsonl",
	} {
		out = append(out, realSession{"trace/" + strings.Replace(tr, "/testdata/", "/", 1), filepath.Join("..", "..", "importers", filepath.FromSlash(tr))})
	}
	agents := importerstest.AgentsRoot(t)
	for _, cli := range []string{"claude", "codex", "gemini"} {
		for _, run := range importerstest.AgentsRuns(t, agents, cli) {
			out = append(out, realSession{"harness/" + cli + "/" + run.Scenario, harnessMain(t, run)})
			// Claude Code's own OpenTelemetry traces of the same run
			// (claude_code.* spans), as a collector's file exporter writes
			// them: one export a line. Not Gemini CLI's, which a fresh
			// harness run collects too: they import as one run a trace,
			// not as the session.
			if p := run.OTLP(t); p != "" && cli == "claude" {
				out = append(out, realSession{"harness-otlp/" + cli + "/" + run.Scenario, p})
			}
		}
	}
	return out
}

// harnessMain is the session file a user of the CLI imports: Claude
// Code's session file, Codex's rollout of the thread no other spawned,
// Gemini CLI's session file.
func harnessMain(t *testing.T, run *importerstest.AgentsRun) string {
	t.Helper()
	var ps []string
	switch run.CLI {
	case "claude":
		ps = run.Session("*/*.jsonl")
	case "codex":
		for _, p := range run.Session("*/*/*/rollout-*.jsonl") {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(b), "\n")
			var l struct {
				Payload struct {
					Source json.RawMessage `json:"source"`
				} `json:"payload"`
			}
			if json.Unmarshal([]byte(first), &l) == nil && !strings.Contains(string(l.Payload.Source), "subagent") {
				ps = append(ps, p)
			}
		}
	case "gemini":
		ps = run.Session("*/chats/session-*.jsonl")
	}
	if len(ps) == 0 {
		t.Fatalf("%s/%s: no main session file", run.CLI, run.Scenario)
	}
	return ps[0]
}

// auditReal imports a real session as inspect import does and audits it
// as inspect audit does: every rule, the stack's profile, the recorded
// requests and the prompt-cache analysis.
func auditReal(t *testing.T, db *store.DB, path string) (*graph.Run, *findings.Report) {
	t.Helper()
	ctx := context.Background()
	f, err := importers.Detect(all.Formats(), path)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := f.Read(ctx, path, importers.Options{})
	if err != nil || len(ss) != 1 {
		t.Fatalf("import %s: %d sessions, %v", path, len(ss), err)
	}
	id, err := importers.Write(ctx, db, ss[0])
	if err != nil {
		t.Fatal(err)
	}
	g, _, rep := auditStored(t, db, id, rules.All)
	return g, rep
}

// auditStored audits run id of db with rules as inspect audit does: the
// stack's profile, the recorded requests and the prompt-cache analysis.
func auditStored(t *testing.T, db *store.DB, id string, rs []*findings.Rule) (*graph.Run, *cache.Report, *findings.Report) {
	t.Helper()
	ctx := context.Background()
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := cache.Analyze(ctx, g, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&findings.Config{Rules: rs, Profile: stack.For(g.Source),
		Requests: func(seq int64) ([]byte, error) { return db.Request(ctx, id, seq) },
		Cache:    func() (*cache.Report, error) { return cr, nil }}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	return g, cr, rep
}

// realWant is what each real session's audit must report, written by
// reading the session (inspect graph --full, inspect show) as an
// engineer of its stack would: a finding per line, "RULE @AGENT nodes",
// as a fixture's want.txt writes it. A session with no line must report
// nothing. Why each finding stands (or why a rule that used to fire no
// longer does) is said beside it.
var realWant = map[string][]string{
	"claude-code/tool_heavy":           {},
	"claude-code/ae4a77f8-excerpt":     {},
	"kimi-cli/with-subagent-collapsed": {},
	"kimi-cli/with-tool-calls":         {},
	"kimi-code/sample-main":            {},
	// The reviewers got the same two files by design: the shared reads are
	// not overlap; nor is the research branch, told of no file, reading
	// those two: four of the five prompts name them, they are what the
	// fork was about (its common input), and the researcher needed them to
	// compare the approach (before: fork.overlap, "divide the work by
	// subject", which no division would have avoided). The code reviewer
	// grepped the test file, then re-read three ranges of hooks.go it had
	// read whole before the series: four look-ups known before they
	// began, one per response (Claude Code runs a response's calls at
	// once). The 31-minute research straggler is fork.uneven.
	"claude-code/entire/2.1.37-fanout5-progress": {
		"fanout.missed @reviewer n26 n27 n28 n29 n30 n31 n32 n33",
		"fork.uneven @main n8 n81 n145",
	},
	// Three sub-agents of types that do not exist, refused at once: one
	// mistake of one response, one delegation.rejected naming the three
	// types and their plugin names (not branch.failed with prompt advice;
	// before: three findings, one a type, the same fix three times).
	"claude-code/entire/2.1.4-fanout-errors": {
		"delegation.rejected @main n2 n4 n5 n6 n7 cause=rejected",
	},
	// One reviewer sub-agent given the code in its prompt: the idiom, a
	// small share of the run (was fork.one-branch).
	"claude-code/entire/2.0.76-background8": {},

	// The harness: real CLIs against a scripted model, each scenario's
	// prompt asking for its shape. What the prompt asked for is no
	// mistake of the agent's: "one at a time" (compaction, long-session),
	// "then another" (subagents-serial), a sub-agent for one read
	// (subagent-*, subagents-nested, "fork yourself"). Failed sub-agents
	// are branch.failed, refused ones delegation.rejected.
	// cache.unstable-prefix finds nothing on Claude Code's own changes:
	// in compaction the billing block (system[0], whose cc_version
	// fingerprint follows the first prompt) changes with the summary that
	// rewrites the history at n6 — Anthropic's API leaves the block out of
	// its cache, n6 reported 6,398 cached of the ≈9,700 its prefix kept
	// without it, and the summary starts the conversation again (was:
	// the billing line, fixed in "CLAUDE.md"); in subagent-resumed
	// ToolSearch loads SendMessage at n15 as a deferred tool
	// (defer_loading), which Anthropic's API keeps out of the prompt
	// prefix (was: "Offer agent main's tools in one fixed order").
	"harness/claude/compaction":           {},
	"harness/claude/long-session":         {},
	"harness/claude/parallel-reads":       {},
	"harness/claude/subagent-fails":       {"branch.failed @main n3 n5 n6 cause=provider"},
	"harness/claude/subagent-fork":        {},
	"harness/claude/subagent-interrupted": {},
	"harness/claude/subagent-refused":     {"delegation.rejected @main n2 n3 n4 cause=rejected"},
	"harness/claude/subagent-resumed":     {},
	"harness/claude/subagents-background": {},
	"harness/claude/subagents-nested":     {},
	"harness/claude/subagents-parallel":   {},
	"harness/claude/subagents-serial":     {},
	"harness/codex/compaction":            {},
	"harness/codex/long-session":          {},
	"harness/codex/parallel-reads":        {},
	"harness/codex/subagent-fails":        {"branch.failed @main n3 n4 n5 cause=provider"},
	"harness/codex/subagent-fork":         {},
	"harness/codex/subagent-interrupted":  {},
	"harness/codex/subagent-refused":      {"delegation.rejected @main n2 n3 n4 cause=rejected"},
	"harness/codex/subagent-resumed":      {},
	"harness/codex/subagents-background":  {},
	"harness/codex/subagents-nested":      {},
	"harness/codex/subagents-parallel":    {},
	"harness/codex/subagents-serial":      {},
	"harness/gemini/compaction":           {},
	"harness/gemini/long-session":         {},
	"harness/gemini/parallel-reads":       {},
	"harness/gemini/subagent-fails":       {"branch.failed @main n3 n4 n5 cause=provider"},
	"harness/gemini/subagent-interrupted": {},
	"harness/gemini/subagent-refused":     {"delegation.rejected @main n2 n3 n4 cause=rejected"},
	"harness/gemini/subagents-parallel":   {},
	"harness/gemini/subagents-serial":     {},

	// Claude Code's own traces of the same harness runs (claude_code.*
	// spans, imported with Claude Code's profile: fixes in CLAUDE.md). They
	// keep no tool input and no prompt: calls whose arguments are empty are
	// never "the same call" (before: fork.overlap and join.repeat of
	// "Read " on subagents-parallel/-background, whose sub-agents read
	// different files), and a lone sub-agent is not judged against a
	// request the trace does not hold (before: fork.one-branch on the
	// scenarios that asked for one). A sub-agent failing on the provider's
	// HTTP 400 is the provider's (before: cause prompt, from
	// AgentApiErrorTerminationError); a refused type is delegation.rejected
	// without naming a type the trace does not record (before: branch.failed,
	// cause prompt, on a "general-purpose" it never asked for).
	"harness-otlp/claude/compaction":           {},
	"harness-otlp/claude/long-session":         {},
	"harness-otlp/claude/parallel-reads":       {},
	"harness-otlp/claude/subagent-fails":       {"branch.failed @main n2 n4 n5 cause=provider"},
	"harness-otlp/claude/subagent-fork":        {},
	"harness-otlp/claude/subagent-interrupted": {},
	"harness-otlp/claude/subagent-refused":     {"delegation.rejected @main n1 n2 n3 cause=rejected"},
	"harness-otlp/claude/subagent-resumed":     {},
	"harness-otlp/claude/subagents-background": {},
	"harness-otlp/claude/subagents-nested":     {},
	"harness-otlp/claude/subagents-parallel":   {},
	"harness-otlp/claude/subagents-serial":     {},

	// The frameworks' own traces. Agents SDK: a sub-agent (agent as tool)
	// whose model call got an HTTP 500 is the provider's failure, told to
	// retry or fall back, not a prompt mistake.
	"trace/openaiagents/failure.jsonl": {"branch.failed @lead n2 n4 n9 cause=provider"},
	// one hand-off, taken: nothing to say
	"trace/openaiagents/handoff.jsonl": {},
	// ping and pong handing the turn back and forth until max_turns
	"trace/openaiagents/handoff-loop-max-turns.jsonl": {"handoff.loop @ping n3 n5 n7 n9"},
	// triage asked for two hand-offs in one response; the SDK took the
	// first and dropped the second
	"trace/openaiagents/multiple-handoffs.jsonl": {"handoff.dropped @triage n2 n3 n4"},
	// three agents as tools called in one response, run at once: the idiom
	"trace/openaiagents/parallel-agents-as-tools.jsonl": {},
	// a sub-agent run with max_turns=1 whose one read failed ("permission
	// denied") before the limit: the limit ended it (branch.failed, cause
	// limit: narrower job or more turns); one failure is no failure loop
	// (before: tool.failure-loop too, the same stretch priced twice)
	"trace/openaiagents/python-export.jsonl": {"branch.failed @planner n2 n9 n10 cause=limit"},
	// three reads of region files the request named, one per response, none
	// using another's result: one response with three calls, which the SDK
	// runs at once
	"trace/openaiagents/serial-loop.jsonl": {"fanout.missed @analyst n2 n3 n4 n5 n6 n7"},
	// the AI SDK (6 and 7): sub-agents as tools started in one step and
	// run at once, a stable prompt: nothing to say
	"trace/otlp/aisdk.otlp.jsonl":         {},
	"trace/otlp/aisdk7-legacy.otlp.jsonl": {},
	// LangGraph's map-reduce (Send to parallel nodes) and supervisor (one
	// hand-off each way per expert), Mastra's workflow of parallel steps:
	// each shape the framework's idiom, run as meant
	"trace/otlp/langgraph-mapreduce.otlp.jsonl":  {},
	"trace/otlp/langgraph-supervisor.otlp.jsonl": {},
	"trace/otlp/mastra-workflow.otlp.jsonl":      {},
	// the same supervisor run traced by OpenLLMetry, whose spans name no
	// agent (the messages' names and the transfer tools' Commands do): the
	// same three agents and four hand-offs, each agent's requests growing
	// its own prefix — nothing to say. Before: one agent
	// "langgraph-supervisor" and a false cache.unstable-prefix ("tool
	// web_search added": the research expert's request compared with the
	// supervisor's)
	"trace/otlp/openllmetry-langgraph-supervisor.otlp.jsonl": {},
}

// TestRealSessions_Audit audits every real session the project holds and
// checks it reports exactly what realWant says (rule, agent, evidence),
// so each finding is one an engineer of that stack agrees with; a new
// session must be read and given its line before the test passes.
func TestRealSessions_Audit(t *testing.T) {
	db := importerstest.Store(t)
	for _, rs := range realSessions(t) {
		t.Run(rs.name, func(t *testing.T) {
			want, ok := realWant[rs.name]
			if !ok {
				_, rep := auditReal(t, db, rs.path)
				t.Fatalf("no expectation for this session: read it and add its findings to realWant; it reports\n  %s\n%s", strings.Join(got(rep), "\n  "), dump(rep))
			}
			_, rep := auditReal(t, db, rs.path)
			want = append([]string(nil), want...)
			sort.Strings(want)
			if g := got(rep); strings.Join(g, "\n") != strings.Join(want, "\n") {
				t.Errorf("findings:\n  %s\nwant:\n  %s\n%s", strings.Join(g, "\n  "), strings.Join(want, "\n  "), dump(rep))
			}
		})
	}
}

// TestRealSessions_UniqueIDs: no two findings of a real session's audit
// share an id (before: two fork.one-branch findings of one run on the
// same agent and shape had one fingerprint).
func TestRealSessions_UniqueIDs(t *testing.T) {
	db := importerstest.Store(t)
	for _, rs := range realSessions(t) {
		t.Run(rs.name, func(t *testing.T) {
			_, rep := auditReal(t, db, rs.path)
			seen := map[string]string{}
			for _, f := range rep.Findings {
				if o, dup := seen[f.Fingerprint]; dup {
					t.Errorf("id %s of %s (%s) is also %s's", f.Fingerprint, f.Rule, f.Message, o)
				}
				seen[f.Fingerprint] = f.Rule
			}
		})
	}
}

// got lists the report's findings as want.txt's finding lines, sorted.
func got(rep *findings.Report) []string {
	var out []string
	for _, f := range rep.Findings {
		line := f.Rule + " @" + f.Agent + " " + strings.Join(f.Nodes, " ")
		if f.Cause != "" {
			line += " cause=" + string(f.Cause)
		}
		out = append(out, line)
	}
	sort.Strings(out)
	return out
}

// dump writes the report's findings and checks, for a failure's message.
func dump(rep *findings.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		b.WriteString("  " + f.Rule + " @" + f.Agent + " " + strings.Join(f.Nodes, ",") + ": " + f.Message + "\n")
	}
	for _, c := range rep.Checks {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

// TestOwner_Fixtures: on real sessions and traces of each stack (and our
// hand-written Claude Code sessions where no real one shows the case),
// every fix names the file the user owns in the stack's words, or says
// the agent is not the user's to edit; written by hand from reading each
// audit. Before, Claude Code's fixes read "the instructions of agent
// main: Tell main in the instructions of agent main to …".
func TestOwner_Fixtures(t *testing.T) {
	db := importerstest.Store(t)
	real := map[string]string{}
	for _, rs := range realSessions(t) {
		real[rs.name] = rs.path
	}
	tests := []struct {
		session, finding, loc, text string
	}{
		// Claude Code 2.1.37: a custom reviewer sub-agent, and the main agent
		{"claude-code/entire/2.1.37-fanout5-progress", "fanout.missed @reviewer", ".claude/agents/reviewer.md",
			"In .claude/agents/reviewer.md, tell the reviewer sub-agent to make several calls (Grep, Read) that do not depend on each other's results"},
		{"testdata/sessions/claude-code/overlap-one-sibling-input/session.jsonl", "fork.overlap @main", "CLAUDE.md",
			"In CLAUDE.md, tell the main agent to divide the work by subject, naming in each sub-agent's prompt the files or items only it covers"},
		{"claude-code/entire/2.1.4-fanout-errors", "delegation.rejected @main", "CLAUDE.md",
			`In CLAUDE.md, tell the main agent to ask for the types by the names they exist under: "entire-engineering:research:repo-research-analyst" for "repo-research-analyst", "entire-engineering:research:best-practices-researcher" for "best-practices-researcher", "entire-engineering:research:framework-docs-researcher" for "framework-docs-researcher", or define them in .claude/agents/ (repo-research-analyst.md, best-practices-researcher.md and framework-docs-researcher.md)`},
		// a built-in sub-agent type: not the user's to edit
		{"testdata/sessions/claude-code/parallel-builtin-subagent/session.jsonl", "fanout.missed @general-purpose", "CLAUDE.md",
			"general-purpose is a built-in agent type of Claude Code, whose prompt is not yours to edit: in CLAUDE.md, tell the main agent to ask it, in the prompt it starts it with, to make several Read calls"},
		{"harness/claude/subagent-fails", "branch.failed @main", "the model provider (no instructions to change)",
			`Not a prompt mistake: the model provider failed under sub-agent "Part t1"`},
		// Claude Code's own traces: Claude Code's files, not "agent main's
		// instructions (in code)"; a type the trace does not record is not
		// named, nor is a file for it
		{"harness-otlp/claude/subagent-refused", "delegation.rejected @main", "CLAUDE.md",
			"In CLAUDE.md, tell the main agent to ask for a type that exists (no list of the types that exist was recorded)"},
		{"harness/codex/subagent-refused", "delegation.rejected @main", "AGENTS.md",
			"In AGENTS.md, tell the main agent to ask for a type that exists (no list of the types that exist was recorded), or define it in .codex/agents/no-such-agent.toml"},
		{"harness/gemini/subagent-refused", "delegation.rejected @main", "GEMINI.md",
			"In GEMINI.md, tell the main agent to ask for a type that exists (no list of the types that exist was recorded), or define it in .gemini/agents/no-such-agent.md"},
		// Claude Code's billing block, changed with nothing else while the
		// endpoint reported no cache reads: Claude Code's setting, not CLAUDE.md
		{"testdata/sessions/claude-code/cache-billing-missed/session.jsonl", "cache.unstable-prefix @main", ".claude/settings.json",
			`Set "env": {"CLAUDE_CODE_ATTRIBUTION_HEADER": "0"} in .claude/settings.json (or CLAUDE_CODE_ATTRIBUTION_HEADER=0 in the environment) so Claude Code stops sending the billing block`},
		// the Agents SDK: the agent's instructions in code
		{"../../importers/openaiagents/testdata/serial-loop.jsonl", "fanout.missed @analyst", "agent analyst's instructions (in code)",
			"In agent analyst's instructions (in code), tell it to make several read_file calls that do not depend on each other's results (regions/eu.md, regions/us.md, regions/apac.md) in one response"},
		{"../../importers/openaiagents/testdata/handoff-loop-max-turns.jsonl", "handoff.loop @ping", "agent ping's instructions (in code)",
			"Decide whether ping or pong owns this job and say so in both agent ping's instructions (in code) and agent pong's instructions (in code)"},
		{"../../importers/openaiagents/testdata/python-export.jsonl", "branch.failed @planner", "agent planner's instructions (in code)",
			`Sub-agent "ask_us" ran out of its limit`},
		// LangGraph: the node's prompt. (Not OpenLLMetry's supervisor trace
		// any more: its cache.unstable-prefix @langgraph-supervisor compared
		// the supervisor's and the research expert's requests as one
		// agent's, and is gone now that the import keeps the agents; the
		// react agents' real traces below check the node's prompt.)
		// A LangGraph react agent under the app's own root span ("weather-app"):
		// before, a generic OTLP app's "agent weather_assistant's instructions (in code)"
		{"../../fixtures/cache-unstable-system-time/trace.otlp.jsonl", "cache.unstable-prefix @weather_assistant", "the prompt of node weather_assistant (in code)",
			"Move what changes per call out of node weather_assistant's system prompt into the latest message"},
		{"../../fixtures/cache-unstable-tool-order/trace.otlp.jsonl", "cache.unstable-prefix @weather_assistant", "the prompt of node weather_assistant (in code)",
			"Offer node weather_assistant's tools in one fixed order"},
	}
	for _, tt := range tests {
		t.Run(tt.session+" "+tt.finding, func(t *testing.T) {
			path := real[tt.session]
			if path == "" {
				path = filepath.Join("..", "..", strings.TrimPrefix(tt.session, "../../"))
			}
			_, rep := auditReal(t, db, path)
			var f *findings.Finding
			for i := range rep.Findings {
				if rep.Findings[i].Rule+" @"+rep.Findings[i].Agent == tt.finding {
					f = &rep.Findings[i]
					break
				}
			}
			if f == nil {
				t.Fatalf("no %s finding:\n%s", tt.finding, dump(rep))
			}
			if got := f.Fix.Location.String(); got != tt.loc {
				t.Errorf("fix location %q, want %q", got, tt.loc)
			}
			if !strings.HasPrefix(f.Fix.Text, tt.text) {
				t.Errorf("fix text:\n %q\nwant it to start\n %q", f.Fix.Text, tt.text)
			}
			if strings.Contains(f.Fix.Text, "the instructions of agent") {
				t.Errorf("fix text speaks of no stack's file: %q", f.Fix.Text)
			}
		})
	}
}
