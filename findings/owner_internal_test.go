package findings

import (
	"testing"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
	"github.com/inspect-dev/inspect/stack"
)

// TestOwner_PerStack: the place a fix goes and how it is said, per stack,
// written by hand: CLAUDE.md or .claude/agents/<type>.md for Claude Code,
// a built-in or a plugin's agent named as one the user cannot edit (with
// what the user can do instead), AGENTS.md for Codex, GEMINI.md for
// Gemini CLI, the agent's instructions in code for the SDKs, the node's
// prompt for LangGraph, and our runtime's words as they have always been.
// Before, every imported agent's fix read "Tell main in the instructions
// of agent main to …".
func TestOwner_PerStack(t *testing.T) {
	imported := func(instr map[string]string, files ...string) *Project {
		var fs []record.File
		for _, f := range files {
			fs = append(fs, record.File{Path: f, Content: "# instructions\nRead what you need.\nUse sub-agents for long jobs.\n"})
		}
		return &Project{Project: snapshot.Read(record.Project{Files: fs}), Imported: true, Instructions: instr, Source: "s.jsonl"}
	}
	ours := ParseProject(record.Project{Files: []record.File{
		{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    prompt: agents/analyst.md\n    tools: [read_file]\n"},
		{Path: "agents/analyst.md", Content: "You are the analyst.\nFork per region.\n"}}})
	const change = "make the calls in one response"
	tests := []struct {
		name         string
		p            *Project
		prof         *stack.Profile
		agent, trunk string
		loc, text    string
	}{
		{"our runtime", ours, stack.Inspect, "analyst", "analyst",
			"agents/analyst.md:2", "Tell analyst in agents/analyst.md to " + change},
		{"claude main, no CLAUDE.md in the snapshot", imported(nil), stack.ClaudeCode, "main", "main",
			"CLAUDE.md", "In CLAUDE.md, tell the main agent to " + change},
		{"claude main, CLAUDE.md in the snapshot", imported(map[string]string{"main": "CLAUDE.md"}, "CLAUDE.md"), stack.ClaudeCode, "main", "main",
			"CLAUDE.md:3", "In CLAUDE.md, tell the main agent to " + change},
		{"claude custom sub-agent, its file in the snapshot", imported(map[string]string{"reviewer": ".claude/agents/reviewer.md"}, ".claude/agents/reviewer.md"), stack.ClaudeCode, "reviewer", "main",
			".claude/agents/reviewer.md:3", "In .claude/agents/reviewer.md, tell the reviewer sub-agent to " + change},
		{"claude custom sub-agent, no file", imported(nil), stack.ClaudeCode, "reviewer", "main",
			".claude/agents/reviewer.md", "In .claude/agents/reviewer.md, tell the reviewer sub-agent to " + change},
		{"claude built-in sub-agent", imported(nil), stack.ClaudeCode, "Explore", "main",
			"CLAUDE.md", "Explore is a built-in agent type of Claude Code, whose prompt is not yours to edit: in CLAUDE.md, tell the main agent to ask it, in the prompt it starts it with, to " + change +
				"; or define an agent of your own in .claude/agents/<name>.md that does, and have the main agent use it"},
		{"claude built-in overridden by the user's file", imported(nil, ".claude/agents/Explore.md"), stack.ClaudeCode, "Explore", "main",
			".claude/agents/Explore.md:3", "In .claude/agents/Explore.md, tell the Explore sub-agent to " + change},
		{"claude plugin agent", imported(nil), stack.ClaudeCode, "entire-engineering:review:security-sentinel", "main",
			"CLAUDE.md", "entire-engineering:review:security-sentinel is an agent of plugin entire-engineering, whose prompt is not yours to edit: in CLAUDE.md, tell the main agent to ask it, in the prompt it starts it with, to " + change +
				"; or define an agent of your own in .claude/agents/<name>.md that does, and have the main agent use it"},
		{"codex main", imported(nil), stack.Codex, "main", "main",
			"AGENTS.md", "In AGENTS.md, tell the main agent to " + change},
		{"codex custom role", imported(nil), stack.Codex, "reviewer", "main",
			".codex/agents/reviewer.toml", "In .codex/agents/reviewer.toml, tell the reviewer sub-agent to " + change},
		{"codex built-in role", imported(map[string]string{"main": "AGENTS.md"}, "AGENTS.md"), stack.Codex, "explorer", "main",
			"AGENTS.md:3", "explorer is a built-in agent type of Codex, whose prompt is not yours to edit: in AGENTS.md, tell the main agent to ask it, in the prompt it starts it with, to " + change +
				"; or define an agent of your own in .codex/agents/<name>.toml that does, and have the main agent use it"},
		{"gemini main", imported(map[string]string{"main": "GEMINI.md"}), stack.GeminiCLI, "main", "main",
			"GEMINI.md", "In GEMINI.md, tell the main agent to " + change},
		{"gemini built-in sub-agent", imported(nil), stack.GeminiCLI, "generalist", "main",
			"GEMINI.md", "generalist is a built-in agent type of Gemini CLI, whose prompt is not yours to edit: in GEMINI.md, tell the main agent to ask it, in the prompt it starts it with, to " + change +
				"; or define an agent of your own in .gemini/agents/<name>.md that does, and have the main agent use it"},
		{"kimi sub-agent", imported(nil), stack.KimiCLI, "coder", "main",
			"AGENTS.md", "In AGENTS.md (every agent of Kimi CLI reads it), tell the coder sub-agent to " + change},
		{"agents sdk", imported(nil), stack.OpenAIAgents, "triage", "triage",
			"agent triage's instructions (in code)", "In agent triage's instructions (in code), tell it to " + change},
		{"ai sdk sub-agent", imported(nil), stack.AISDK, "researcher", "lead",
			"agent researcher's instructions (in code)", "In agent researcher's instructions (in code), tell it to " + change},
		{"mastra", imported(nil), stack.Mastra, "weather", "weather",
			"agent weather's instructions (in code)", "In agent weather's instructions (in code), tell it to " + change},
		{"langgraph", imported(nil), stack.LangGraph, "researcher", "supervisor",
			"the prompt of node researcher (in code)", "In the prompt of node researcher (in code), tell it to " + change},
		{"a format inspect does not know", imported(nil), &stack.Profile{Format: "other", Name: "other"}, "x", "x",
			"the instructions of agent x", "In the instructions of agent x, tell it to " + change},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.p.owner(tt.prof, tt.agent, tt.trunk, []string{"sub-agent", "fork"})
			if got := o.Location.String(); got != tt.loc {
				t.Errorf("location %q, want %q", got, tt.loc)
			}
			if got := o.Tell(change); got != tt.text {
				t.Errorf("Tell:\n got %q\nwant %q", got, tt.text)
			}
			if o.Location.Path == "" && o.Location.Source != "s.jsonl" && !o.ours {
				t.Errorf("a label location without the imported file: %+v", o.Location)
			}
		})
	}
}
