package stack_test

import (
	"testing"

	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
)

// Every source format a run can have — our runtime's and each importer's
// — has a profile of its own that says how the stack fans out and where
// its instructions live.
func TestEveryFormatHasAProfile(t *testing.T) {
	formats := []string{record.SourceInspect}
	for _, f := range all.Formats() {
		formats = append(formats, f.Name())
	}
	for _, name := range formats {
		p := stack.Of(name)
		if p == nil {
			t.Errorf("source format %q has no profile", name)
			continue
		}
		if p.Format != name || p.Dialect != "" || p.Name == "" || len(p.Fanout) == 0 || len(p.Instructions) == 0 {
			t.Errorf("%s's profile is incomplete: %+v", name, p)
		}
		if got := stack.For(record.Source{Format: name}); got != p {
			t.Errorf("For(%s) = %s, want its format's profile", name, got.Name)
		}
	}
	seen := map[string]bool{}
	for _, p := range stack.Profiles {
		key := p.Format + "/" + p.Dialect
		if seen[key] {
			t.Errorf("two profiles for %s", key)
		}
		seen[key] = true
	}
}

// Our runtime's profile is DESIGN §8: forks with a join, hand-offs by
// transfer tools, branches that may fork again, instructions in
// agents.yaml and prompt files; an empty format (older files) is ours.
func TestInspectProfile(t *testing.T) {
	p := stack.For(record.Source{})
	if p != stack.Inspect || !p.Has(stack.Fork) || p.Has(stack.ParallelCalls) || !p.NestedSubAgents || p.Handoff == "" ||
		p.Instructions[0] != "agents.yaml" || p.InstructionsInCode {
		t.Errorf("the runtime's profile: %+v", p)
	}
}

// An OTLP trace is refined by the framework its instrumentation scope
// (or user agent) names, as importers/otlp keeps it in Source.Version.
func TestFor_OTLPDialects(t *testing.T) {
	for version, want := range map[string]*stack.Profile{
		"@arizeai/openinference-instrumentation-langchain 4.1.1": stack.LangGraph,
		"ai 6.0.326":                  stack.AISDK,
		"ai":                          stack.AISDK,
		"@mastra/core 0.10.1":         stack.Mastra,
		"openai-agents 0.1.0":         stack.OpenAIAgents,
		"":                            stack.OTLP,
		"opentelemetry-genai 1.0":     stack.OTLP,
		"aiohttp-instrumentation 0.4": stack.OTLP,
		// Claude Code's own traces, as importers/otlp keeps their scope
		"com.anthropic.claude_code.tracing 1.0.0": stack.ClaudeCode,
	} {
		if got := stack.For(record.Source{Format: "otlp", Version: version}); got != want {
			t.Errorf("For(otlp %q) = %s, want %s", version, got.Name, want.Name)
		}
	}
	if p := stack.For(record.Source{Format: "someday"}); p.Format != "someday" || len(p.Fanout) != 0 {
		t.Errorf("an unknown format claims %+v", p)
	}
}

// The API each stack's calls are made in: what inspect ask sends a call of
// its runs in (DESIGN §18 "ask").
func TestProfile_API(t *testing.T) {
	for p, want := range map[*stack.Profile]string{
		stack.Inspect:    stack.APIOpenAIChat,
		stack.ClaudeCode: stack.APIAnthropic,
		stack.Codex:      stack.APIOpenAIResponses,
		stack.KimiCLI:    stack.APIOpenAIChat,
		stack.OTLP:       "", // any: the trace's framework says, not the format
	} {
		if p.API != want {
			t.Errorf("%s's API = %q, want %q", p.Name, p.API, want)
		}
	}
}

// A trace inspect itself exported (its instrumentation scope, as otel
// writes it) is our runtime's run read back: our runtime's terms, from a
// trace, so the audit of a run sent to Jaeger and imported back is the
// audit of the run (before: the OTLP profile, whose stack runs a
// response's calls at once, and the audit told our runtime's agents to
// make calls in one response instead of forking).
func TestFor_InspectsOwnTrace(t *testing.T) {
	p := stack.For(record.Source{Format: "otlp", Version: otel.ScopeName + " 1.2.3"})
	if p != stack.InspectTrace || !p.Has(stack.Fork) || p.Has(stack.ParallelCalls) || !p.Trace {
		t.Errorf("For(inspect's own trace) = %+v", p)
	}
	if p := stack.For(record.Source{Format: "otlp", Version: "github.com/inspect-dev/inspector 1"}); p != stack.OTLP {
		t.Errorf("For(another scope) = %s, want the OTLP profile", p.Name)
	}
}

// A run inspect had imported from another tool, exported as a trace and
// read back, names that tool after inspect's scope: its profile is that
// tool's (before: inspect's own, and a Claude Code session through Jaeger
// was told to fork instead of making its calls in one response).
func TestFor_ImportedRunThroughATrace(t *testing.T) {
	for v, want := range map[string]*stack.Profile{
		otel.ScopeName + " from claude-code 2.1.40":                                          stack.ClaudeCode,
		otel.ScopeName + " from otlp @arizeai/openinference-instrumentation-langchain 4.1.1": stack.LangGraph,
		otel.ScopeName + " from codex":                                                       stack.Codex,
		otel.ScopeName + " from inspect":                                                     stack.InspectTrace,
		otel.ScopeName:                                                                       stack.InspectTrace,
	} {
		if p := stack.For(record.Source{Format: "otlp", Version: v}); p != want {
			t.Errorf("For(otlp %q) = %s, want %s", v, p.Name, want.Name)
		}
	}
}

// TestUserTool: on Claude Code only an MCP server's tools are the user's
// (its other tools are built in); a program's tools (our runtime, the
// SDKs) are all the user's. Written by hand.
func TestUserTool(t *testing.T) {
	tests := []struct {
		p    *stack.Profile
		tool string
		want bool
	}{
		{stack.ClaudeCode, "mcp__github__create_issue", true},
		{stack.ClaudeCode, "SendMessage", false},
		{stack.ClaudeCode, "Read", false},
		{stack.Inspect, "read_file", true},
		{stack.LangGraph, "get_forecast", true},
		{nil, "anything", true},
	}
	for _, tt := range tests {
		if got := tt.p.UserTool(tt.tool); got != tt.want {
			t.Errorf("%v UserTool(%q) = %v, want %v", tt.p, tt.tool, got, tt.want)
		}
	}
	// what Claude Code's provider leaves out of the cached prefix; no
	// other stack's requests have parts left out
	if u := stack.ClaudeCode.Unkeyed(); len(u) != 2 || u[0].SystemText != "x-anthropic-billing-header:" || u[0].OffEnv != "CLAUDE_CODE_ATTRIBUTION_HEADER=0" || u[1].ToolFlag != "defer_loading" {
		t.Errorf("Claude Code leaves out %+v", u)
	}
	for _, p := range stack.Profiles {
		if p != stack.ClaudeCode && (len(p.Unkeyed()) > 0 || p.Compacted != "" || p.UserTools != nil) {
			t.Errorf("%s: parts left out %+v, compaction %q, user tools %+v", p.Name, p.Unkeyed(), p.Compacted, p.UserTools)
		}
	}
}
