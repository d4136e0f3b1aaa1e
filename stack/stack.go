// Package stack holds each agent stack's own terms (DESIGN §18
// "Profiles"): for every source format a run can come from — our runtime,
// or a format an importer reads — how that stack fans out, how it
// delegates and hands off, whether its sub-agents may start sub-agents,
// where its instructions live, and a name a person knows it by.
//
// The analysis layer picks a run's Profile from its record.Source (For)
// and hands it to the audit (findings.Config.Profile) and to the texts of
// its fixes, so a rule can speak of "make these calls in one response" to
// Claude Code and of `fork:` in agents.yaml to our runtime. Our runtime's
// Profile describes DESIGN §8 exactly.
//
// It imports nothing of ours but record: it is vocabulary.
package stack

import (
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// Fanout is a way a stack does work side by side.
type Fanout string

// The ways of fanning out (DESIGN §18).
const (
	// ParallelCalls: several tool calls from one model response run
	// concurrently (Claude Code, Codex, Kimi, the Agents SDK with
	// parallel_tool_calls, a LangGraph ToolNode, the AI SDK).
	ParallelCalls Fanout = "parallel-calls"
	// Fork: a fork tool starts branches that run at once and a join
	// waits for them (our runtime).
	Fork Fanout = "fork"
	// SubAgents: a tool call starts another agent with its own
	// conversation (Task/Agent, spawn_agent, agents-as-tools, Send).
	SubAgents Fanout = "sub-agents"
)

// Profile is one stack's terms.
type Profile struct {
	// Format is the record.Source format it describes ("inspect",
	// "claude-code", "otlp", …); a refinement of a format (an OTLP trace
	// of LangGraph) names the format it refines and sets Dialect.
	Format string
	// Dialect names the framework within Format ("langgraph", "ai-sdk",
	// "mastra", "openai-agents"); "" for the format itself.
	Dialect string
	// Name is what a person calls the stack ("Claude Code", "our runtime").
	Name string
	// Fanout lists how the stack does work side by side, in the order its
	// fix texts prefer.
	Fanout []Fanout
	// Delegate is how one agent gives another a piece of work and gets an
	// answer back ("a fork: branch", "the Task tool"); "" when it cannot.
	Delegate string
	// Handoff is how one agent passes the conversation to another for
	// good ("a transfer_to_<agent> tool"); "" when the stack has none.
	Handoff string
	// NestedSubAgents is set when a sub-agent (a branch, a Task) may
	// itself start sub-agents (our runtime: up to maxForkDepth).
	NestedSubAgents bool
	// Instructions are where the stack keeps an agent's instructions, in
	// the order a fix looks for them ("agents.yaml", "the agent's prompt
	// file", "CLAUDE.md", ".claude/agents/<type>.md").
	Instructions []string
	// InstructionsInCode is set when an agent's instructions are written
	// in the program that builds it (the Agents SDK, the AI SDK, Mastra,
	// a LangGraph node's prompt): a fix names the agent, not a file.
	InstructionsInCode bool
	// API is the wire format the stack's model calls are made in, by the
	// name package chat gives it ("anthropic-messages", "openai-responses",
	// "openai-chat"): the format inspect ask sends a call of this stack
	// in. "" when the stack may speak any (a trace's framework): Chat
	// Completions, which OpenAI-compatible servers speak, is assumed.
	API string
	// Trace is set when the stack's runs are read from a trace (spans: the
	// Agents SDK's export, OTLP) rather than a session file.
	Trace bool
	// LeftOut are the parts of the stack's requests its own provider
	// leaves out of the prefix its prompt cache compares (Claude Code's
	// billing block, its deferred tools): the cache analysis compares a
	// request without them (DESIGN §15, §18).
	LeftOut []Unkeyed
	// Compacted is the text the first message of a history the stack's
	// compaction rewrote starts with (Claude Code's summary): the
	// conversation starts again there, its earlier messages gone.
	Compacted string
	// UserTools, when set, tells the tools the user adds (Claude Code's
	// MCP tools) from the stack's own: those are built in, and no file of
	// the user's changes them. Nil when every tool of a request is the
	// user's (a program's tools).
	UserTools *UserTools
}

// UserTools are the tools a user adds to a stack whose own are built in.
type UserTools struct {
	// Prefix starts their names ("mcp__": mcp__<server>__<tool>), the
	// server's name following it up to "__".
	Prefix string
	// File is where the user configures their servers (".mcp.json").
	File string
	// Deferred is the setting that has the stack load them deferred,
	// outside the cached prefix; "" when it has none.
	Deferred string
}

// Unkeyed is a part of a stack's requests that its own provider leaves
// out of the prefix its prompt cache compares: it may change from call to
// call without costing a cache read there. An endpoint that caches by the
// request's bytes (a proxy, another provider the stack is pointed at)
// compares it, and breaks on it where Off says how to stop the stack
// sending it.
type Unkeyed struct {
	// Name says what it is, in the stack's words ("the billing block
	// (x-anthropic-billing-header)").
	Name string
	// SystemText marks a text block of the request's system array that
	// starts with it.
	SystemText string
	// ToolFlag marks a tool definition whose member of that name is true
	// ("defer_loading").
	ToolFlag string
	// Why says why the provider leaves it out.
	Why string
	// Elsewhere says which endpoints compare it; Off what the user sets so
	// the stack stops sending it, in the file OffFile, or OffEnv in the
	// environment. "" when no endpoint the stack reaches compares it.
	Elsewhere, Off, OffFile, OffEnv string
}

// Unkeyed is p's LeftOut (none for a nil profile).
func (p *Profile) Unkeyed() []Unkeyed {
	if p == nil {
		return nil
	}
	return p.LeftOut
}

// UserTool reports whether tool name is one the user added (an MCP
// server's), not one built into the stack; every tool is the user's on a
// stack whose tools are a program's own (UserTools nil).
func (p *Profile) UserTool(name string) bool {
	return p == nil || p.UserTools == nil || strings.HasPrefix(name, p.UserTools.Prefix)
}

// The APIs a stack speaks (package chat's format names: stack imports
// nothing but record).
const (
	APIAnthropic       = "anthropic-messages"
	APIOpenAIResponses = "openai-responses"
	APIOpenAIChat      = "openai-chat"
)

// Stopped says how a run from src whose status is st (cancelled or
// interrupted) stopped, as the words after "this run was ", in terms that
// fit where the run came from: our runtime's interrupted run lost the
// process recording it, its cancelled one was stopped by Ctrl-C; an
// imported run says only what its source shows — the session file (or the
// trace) ends before the conversation finished, or it records the
// conversation as stopped — never that a process died or a key was
// pressed. "" for any other status.
func Stopped(src record.Source, st record.Status) string {
	what := "the session file"
	if For(src).Trace {
		what = "the trace"
	}
	switch ours := src.IsInspect(); {
	case st == record.StatusInterrupted && ours:
		return "interrupted: the process recording it died (killed, crashed, its terminal closed) before it finished"
	case st == record.StatusCancelled && ours:
		return "cancelled (Ctrl-C) before it finished"
	case st == record.StatusInterrupted:
		return "interrupted: " + what + " ends before this conversation finished"
	case st == record.StatusCancelled:
		return "cancelled: " + what + " records that it was stopped before it finished"
	}
	return ""
}

// Has reports whether the stack fans out in way f.
func (p *Profile) Has(f Fanout) bool {
	if p == nil {
		return false
	}
	for _, x := range p.Fanout {
		if x == f {
			return true
		}
	}
	return false
}

// Inspect is our runtime (DESIGN §8): forks with a join, hand-offs by
// transfer tools, branches that may fork again up to maxForkDepth, and
// instructions in agents.yaml and the prompt files it names.
var Inspect = &Profile{
	Format:          record.SourceInspect,
	Name:            "inspect's runtime",
	Fanout:          []Fanout{Fork},
	Delegate:        "a fork: branch (the fork tool)",
	Handoff:         "a transfer_to_<agent> tool (handoffs: in agents.yaml)",
	NestedSubAgents: true,
	Instructions:    []string{"agents.yaml", "the agent's prompt file"},
	API:             APIOpenAIChat,
}

// ClaudeCode is Claude Code (importers/claudecode).
var ClaudeCode = &Profile{
	Format:       "claude-code",
	Name:         "Claude Code",
	Fanout:       []Fanout{ParallelCalls, SubAgents},
	Delegate:     "the Task (Agent) tool with a subagent_type",
	Instructions: []string{"CLAUDE.md", ".claude/agents/<type>.md"},
	API:          APIAnthropic,
	LeftOut: []Unkeyed{{
		// 2.1.36 on: system[0], cc_version=<version>.<3 hex of the first
		// prompt>; cc_entrypoint=…; (a native build adds cch=<5 hex>, of the
		// request's content)
		Name:       "the billing block (x-anthropic-billing-header)",
		SystemText: "x-anthropic-billing-header:",
		Why:        "Anthropic's API reads it as a header and leaves it out of the cached prompt",
		Elsewhere:  "an endpoint that caches by prefix (a proxy or another provider reached through ANTHROPIC_BASE_URL)",
		Off:        `"env": {"CLAUDE_CODE_ATTRIBUTION_HEADER": "0"}`,
		OffFile:    ".claude/settings.json",
		OffEnv:     "CLAUDE_CODE_ATTRIBUTION_HEADER=0",
	}, {
		// tools ToolSearch loads (SendMessage, MCP tools) are sent with
		// defer_loading: true
		Name:     "a deferred tool (defer_loading, loaded by ToolSearch)",
		ToolFlag: "defer_loading",
		Why:      "Anthropic's API keeps deferred tools out of the prompt prefix and adds the one the model finds as a tool_reference in the conversation",
	}},
	// the summary message a compaction (/compact, or automatic) starts
	// the history with
	Compacted: "This session is being continued from a previous conversation",
	UserTools: &UserTools{Prefix: "mcp__", File: ".mcp.json",
		// ToolSearch sends the tools it loads with defer_loading
		Deferred: `"env": {"ENABLE_TOOL_SEARCH": "true"} in .claude/settings.json`},
}

// Codex is OpenAI's Codex CLI (importers/codex).
var Codex = &Profile{
	Format:       "codex",
	Name:         "Codex",
	Fanout:       []Fanout{ParallelCalls, SubAgents},
	Delegate:     "spawn_agent",
	Instructions: []string{"AGENTS.md"},
	API:          APIOpenAIResponses,
}

// GeminiCLI is Google's Gemini CLI (importers/geminicli): function calls
// of one response, and sub-agents started with invoke_agent. Its calls
// are Gemini's generateContent, which is none of package chat's formats:
// API is left "" (ask sends Chat Completions, which Google serves for its
// models too).
var GeminiCLI = &Profile{
	Format:       "gemini-cli",
	Name:         "Gemini CLI",
	Fanout:       []Fanout{ParallelCalls, SubAgents},
	Delegate:     "invoke_agent",
	Instructions: []string{"GEMINI.md", ".gemini/agents/<name>.md"},
}

// KimiCLI is Moonshot's Kimi CLI (importers/kimicli).
var KimiCLI = &Profile{
	Format:       "kimi-cli",
	Name:         "Kimi CLI",
	Fanout:       []Fanout{ParallelCalls, SubAgents},
	Delegate:     "the Task tool with a sub-agent",
	Instructions: []string{"AGENTS.md", "the agent file (agent.yaml and its system prompt)"},
	API:          APIOpenAIChat, // Moonshot's API
}

// KimiCode is Kimi Code (importers/kimicode).
var KimiCode = &Profile{
	Format:       "kimi-code",
	Name:         "Kimi Code",
	Fanout:       []Fanout{ParallelCalls, SubAgents},
	Delegate:     "the Task tool with a sub-agent",
	Instructions: []string{"AGENTS.md", "the agent file (agent.yaml and its system prompt)"},
	API:          APIOpenAIChat, // Moonshot's API
}

// OpenAIAgents is the OpenAI Agents SDK (importers/openaiagents, and its
// OTLP traces).
var OpenAIAgents = &Profile{
	Format:             "openai-agents",
	Name:               "the OpenAI Agents SDK",
	Fanout:             []Fanout{ParallelCalls, SubAgents},
	Delegate:           "an agent as a tool (agent.as_tool)",
	Handoff:            "a handoff (handoffs=[…], transfer_to_<agent>)",
	NestedSubAgents:    true,
	Instructions:       []string{"the agent's instructions"},
	InstructionsInCode: true,
	Trace:              true,
}

// OTLP is an OpenTelemetry trace whose framework inspect cannot tell
// (importers/otlp): the GenAI conventions only.
var OTLP = &Profile{
	Format:             "otlp",
	Name:               "an OpenTelemetry-traced app",
	Fanout:             []Fanout{ParallelCalls, SubAgents},
	Delegate:           "a sub-agent (an invoke_agent span under a tool call)",
	NestedSubAgents:    true,
	Instructions:       []string{"the agent's instructions"},
	InstructionsInCode: true,
	Trace:              true,
}

// LangGraph is a LangGraph app traced over OTLP.
var LangGraph = &Profile{
	Format:             "otlp",
	Dialect:            "langgraph",
	Name:               "LangGraph",
	Fanout:             []Fanout{ParallelCalls, SubAgents},
	Delegate:           "Send to a node, or a sub-graph",
	Handoff:            "a Command(goto=…) hand-off tool",
	NestedSubAgents:    true,
	Instructions:       []string{"the node's prompt"},
	InstructionsInCode: true,
	Trace:              true,
}

// AISDK is a Vercel AI SDK app traced over OTLP.
var AISDK = &Profile{
	Format:             "otlp",
	Dialect:            "ai-sdk",
	Name:               "the AI SDK",
	Fanout:             []Fanout{ParallelCalls, SubAgents},
	Delegate:           "an agent called from a tool",
	NestedSubAgents:    true,
	Instructions:       []string{"the agent's system / instructions"},
	InstructionsInCode: true,
	Trace:              true,
}

// Mastra is a Mastra app traced over OTLP.
var Mastra = &Profile{
	Format:             "otlp",
	Dialect:            "mastra",
	Name:               "Mastra",
	Fanout:             []Fanout{ParallelCalls, SubAgents},
	Delegate:           "an agent network or an agent as a tool",
	NestedSubAgents:    true,
	Instructions:       []string{"the agent's instructions"},
	InstructionsInCode: true,
	Trace:              true,
}

// InspectTrace is a run of our runtime read back from the OTLP trace
// inspect exported (inspect export --format otlp, --otlp-endpoint, a
// Jaeger that received it): our runtime's terms, read from a trace. Its
// Format is our runtime's, so whatever speaks of our runtime speaks of
// it; its Dialect says it came through OTLP.
var InspectTrace = &Profile{
	Format:          record.SourceInspect,
	Dialect:         "otlp",
	Name:            Inspect.Name,
	Fanout:          Inspect.Fanout,
	Delegate:        Inspect.Delegate,
	Handoff:         Inspect.Handoff,
	NestedSubAgents: true,
	Instructions:    Inspect.Instructions,
	API:             Inspect.API,
	Trace:           true,
}

// inspectScope is the instrumentation scope of the spans inspect exports
// (package otel's ScopeName; stack imports nothing of ours but record).
const inspectScope = "github.com/inspect-dev/inspect"

// Profiles are the profile of every source format, then the refinements
// of a format (For picks one by the source's version).
var Profiles = []*Profile{Inspect, ClaudeCode, Codex, GeminiCLI, KimiCLI, KimiCode, OpenAIAgents, OTLP, InspectTrace, LangGraph, AISDK, Mastra}

// dialects tell an OTLP trace's framework by the instrumentation scope
// (or user agent) the importer keeps in record.Source.Version
// ("@arizeai/openinference-instrumentation-langchain 4.1.1", "ai 6.0.326"):
// the first whose test matches wins.
var dialects = []struct {
	match func(v string) bool
	p     *Profile
}{
	{func(v string) bool { return v == inspectScope || strings.HasPrefix(v, inspectScope+" ") }, InspectTrace},
	// Claude Code's own traces (com.anthropic.claude_code.tracing): the
	// CLI's profile, its fixes in CLAUDE.md and .claude/agents
	{func(v string) bool { return strings.HasPrefix(v, "com.anthropic.claude_code") }, ClaudeCode},
	{func(v string) bool { return strings.Contains(v, "langgraph") || strings.Contains(v, "langchain") }, LangGraph},
	{func(v string) bool { return strings.Contains(v, "mastra") }, Mastra},
	{func(v string) bool {
		return strings.Contains(v, "openai-agents") || strings.Contains(v, "openai_agents")
	}, OpenAIAgents},
	{func(v string) bool { return v == "ai" || strings.HasPrefix(v, "ai ") || strings.Contains(v, "vercel") }, AISDK},
}

// Of returns the profile of source format format itself (no dialect), or
// nil for a format it does not know.
func Of(format string) *Profile {
	if format == "" {
		format = record.SourceInspect
	}
	for _, p := range Profiles {
		if p.Format == format && p.Dialect == "" {
			return p
		}
	}
	return nil
}

// For returns the profile of a run from src: its format's, refined by the
// framework an OTLP trace names; a format it does not know gets a profile
// of its own with only Format and Name set (so nothing is claimed of it).
func For(src record.Source) *Profile {
	if src.IsInspect() {
		return Inspect
	}
	if src.Format == OTLP.Format {
		v := strings.ToLower(strings.TrimSpace(src.Version))
		if orig := strings.TrimSpace(src.Version); strings.HasPrefix(strings.ToLower(orig), inspectScope+" from ") {
			// inspect's trace of a run it had imported from another tool
			// (importers/otlp writes "<scope> from claude-code 2.1.40"):
			// that tool's profile, as the run had before the trip
			format, version, _ := strings.Cut(strings.TrimSpace(orig[len(inspectScope+" from "):]), " ")
			if format != "" && format != record.SourceInspect {
				return For(record.Source{Format: format, Version: strings.TrimSpace(version)})
			}
		}
		for _, d := range dialects {
			if d.match(v) {
				return d.p
			}
		}
	}
	if p := Of(src.Format); p != nil {
		return p
	}
	return &Profile{Format: src.Format, Name: src.Format}
}
