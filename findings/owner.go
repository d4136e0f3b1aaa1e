package findings

import (
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/stack"
)

// Owner is where a fix to an agent's instructions goes, in the terms of
// the stack the run came from (DESIGN §18, "Fixes point at files the user
// owns"): the file the user edits (agents.yaml and the agent's prompt
// file for our runtime; CLAUDE.md or .claude/agents/<type>.md for Claude
// Code; AGENTS.md for Codex; GEMINI.md or .gemini/agents/<name>.md for
// Gemini CLI), or the code that builds the agent (the SDKs: "agent X's
// instructions in code"; LangGraph: "the prompt of node X"). An agent
// whose prompt is the stack's own (a built-in sub-agent type, a plugin's
// agent) is named as such, and its fix goes where the user can make it.
//
// Every rule's fix text names its place through Pass.Owner, and says what
// to tell the agent through Owner.Tell, so no rule words a place itself.
type Owner struct {
	// Agent is the agent the fix is about.
	Agent string
	// Who names the agent in a fix: "analyst" (our runtime), "the main
	// agent", "the reviewer sub-agent", "agent triage", "node researcher".
	Who string
	// Where names the place the fix goes: "agents/analyst.md",
	// "CLAUDE.md", ".claude/agents/reviewer.md", "AGENTS.md", "agent
	// triage's instructions (in code)", "the prompt of node researcher (in
	// code)". For an agent the user cannot edit, the place that steers it
	// (CLAUDE.md, where the main agent is told what to ask of it).
	Where string
	// Location is Where as a fix location: the file and the line about
	// the rule's words when the run's snapshot holds the file, else a
	// label at the imported file.
	Location Location
	// BuiltIn, when not "", says whose the agent's prompt is ("a built-in
	// agent type of Claude Code", "an agent of plugin entire-engineering"):
	// the user cannot edit it, and Tell says what the user can do instead.
	BuiltIn string
	// Delegator names the agent that starts a BuiltIn one ("the main
	// agent"): the one told what to ask of it.
	Delegator string
	// Define is where the user would define an agent of their own in its
	// place (".claude/agents/<name>.md"); "" when the stack has no file
	// for it.
	Define string
	ours   bool     // our runtime's project: today's words
	inCode bool     // the instructions are in the program that builds the agent
	entry  Location // our runtime: the agent's agents.yaml entry
}

// Tell is the fix text that changes what the agent is told: change is a
// verb phrase, said to the agent ("make one or two calls itself").
//
//	our runtime:   Tell analyst in agents/analyst.md to CHANGE
//	a file:        In CLAUDE.md, tell the main agent to CHANGE
//	in code:       In agent triage's instructions (in code), tell it to CHANGE
//	a built-in:    general-purpose is a built-in agent type of Claude Code, whose prompt is
//	               not yours to edit: in CLAUDE.md, tell the main agent to ask it, in the prompt
//	               it starts it with, to CHANGE; or define an agent of your own in
//	               .claude/agents/<name>.md that does, and have the main agent use it
func (o Owner) Tell(change string) string { return upperFirst(o.Clause("to " + change)) }

// Say is Tell with what follows the agent given whole ("when to hand off
// to billing"), at the start of a sentence.
func (o Owner) Say(what string) string { return upperFirst(o.Clause(what)) }

// Clause is Say inside a sentence ("…; if it can fail, tell analyst in
// agents/analyst.md what …"): what follows the agent, given whole.
func (o Owner) Clause(what string) string {
	switch {
	case o.ours:
		return fmt.Sprintf("tell %s in %s %s", o.Who, o.Where, what)
	case o.BuiltIn != "":
		s := fmt.Sprintf("%s is %s, whose prompt is not yours to edit: in %s, tell %s to ask it, in the prompt it starts it with, %s",
			o.Agent, o.BuiltIn, o.Where, o.Delegator, what)
		if o.Define != "" {
			s += fmt.Sprintf("; or define an agent of your own in %s that does, and have %s use it", o.Define, o.Delegator)
		}
		return s
	case o.inCode:
		return fmt.Sprintf("in %s, tell it %s", o.Where, what)
	}
	return fmt.Sprintf("in %s, tell %s %s", o.Where, o.Who, what)
}

// Fix is a fix at the owner's location whose text is Tell(change).
func (o Owner) Fix(change string) Fix {
	return Fix{Location: o.Location, Text: o.Tell(change)}
}

// Entry is where a fix that is no prompt change goes (a retry, a
// permission): the agent's agents.yaml entry for our runtime, else the
// owner's location.
func (o Owner) Entry() Location {
	if o.ours {
		return o.entry
	}
	return o.Location
}

// Ours reports whether the owner is our runtime's project (agents.yaml
// and its prompt files), whose words the fixes have always used.
func (o Owner) Ours() bool { return o.ours }

// upperFirst starts a sentence with a clause of Clause's: "tell …" and
// "in …" are capitalised, an agent's name (general-purpose) is not.
func upperFirst(s string) string {
	if strings.HasPrefix(s, "tell ") || strings.HasPrefix(s, "in ") {
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return s
}

// Owner is where a fix to agent's instructions goes in this run, at the
// line about words when the file is in the snapshot (Owner).
func (p *Pass) Owner(agent string, words ...string) Owner {
	trunk := ""
	if p.Graph != nil {
		trunk = p.Graph.FirstAgent()
	}
	return p.Project.owner(p.Profile, agent, trunk, words)
}

// Builtin agent types, per stack format: the stack's own sub-agents,
// whose prompt the user cannot edit (a file of the user's by the same
// name overrides one, and is then the user's).
var builtinAgents = map[string][]string{
	// Claude Code 2.1's list of available agents, and older versions'
	"claude-code": {"general-purpose", "Explore", "Plan", "statusline-setup", "output-style-setup", "claude-code-guide", "Bash"},
	// Codex's built-in roles of spawn_agent
	"codex": {"default", "worker", "explorer"},
	// Gemini CLI's built-in sub-agents
	"gemini-cli": {"codebase_investigator", "cli_help", "generalist", "browser_agent"},
}

// agentFiles are, per stack format, the file of a sub-agent type the user
// defines (%s its name) and the file that instructs the main agent.
var agentFiles = map[string]struct{ main, sub string }{
	"claude-code": {"CLAUDE.md", ".claude/agents/%s.md"},
	"codex":       {"AGENTS.md", ".codex/agents/%s.toml"},
	"gemini-cli":  {"GEMINI.md", ".gemini/agents/%s.md"},
	"kimi-cli":    {"AGENTS.md", ""},
	"kimi-code":   {"AGENTS.md", ""},
}

func (p *Project) owner(prof *stack.Profile, agent, trunk string, words []string) Owner {
	if prof == nil {
		prof = stack.Inspect
	}
	if !p.Imported {
		// our runtime, or a run of ours read back: agents.yaml and the
		// prompt files, as DESIGN §8 has always said
		return Owner{Agent: agent, Who: agent, Where: p.PromptPath(agent), Location: p.PromptLocation(agent, words...), ours: true, entry: p.EntryLocation(agent)}
	}
	o := Owner{Agent: agent}
	at := func(path string) Location {
		if lines := p.Lines(path); lines != nil {
			return Location{Path: path, Line: lineWith(lines, words)}
		}
		return Location{Label: path, Source: p.Source}
	}
	if f := p.Instructions[agent]; f != "" && p.Files.File(f) != nil {
		// the file the session names for this agent: the user's
		o.Who, o.Where, o.Location = mainOrSub(agent, trunk), f, at(f)
		return o
	}
	files, known := agentFiles[prof.Format]
	switch {
	case prof.InstructionsInCode || !known:
		o.inCode = true
		o.Who = "agent " + agent
		o.Where = "agent " + agent + "'s instructions (in code)"
		if prof.Dialect == stack.LangGraph.Dialect {
			o.Who = "node " + agent
			o.Where = "the prompt of node " + agent + " (in code)"
		}
		if !prof.InstructionsInCode {
			// a stack whose files inspect does not know: say only whose
			o.Where = "the instructions of agent " + agent
		}
		o.Location = Location{Label: o.Where, Source: p.Source}
	case agent == trunk || trunk == "":
		o.Who, o.Where, o.Location = "the main agent", files.main, at(files.main)
	default:
		o.Who = "the " + agent + " sub-agent"
		mainFile := files.main
		if f := p.Instructions[trunk]; f != "" && p.Files.File(f) != nil {
			mainFile = f
		}
		if by := builtinOf(prof, agent); by != "" && (files.sub == "" || p.Files.File(fmt.Sprintf(files.sub, agent)) == nil) {
			o.BuiltIn, o.Delegator, o.Where, o.Location = by, "the main agent", mainFile, at(mainFile)
			if files.sub != "" {
				o.Define = fmt.Sprintf(files.sub, "<name>")
			}
			return o
		}
		if files.sub == "" {
			o.Where = files.main + " (every agent of " + prof.Name + " reads it)"
			o.Location = at(files.main)
			return o
		}
		o.Where = fmt.Sprintf(files.sub, agent)
		o.Location = at(o.Where)
	}
	return o
}

// mainOrSub is how a fix names agent of a file-based stack.
func mainOrSub(agent, trunk string) string {
	if agent == trunk || trunk == "" {
		return "the main agent"
	}
	return "the " + agent + " sub-agent"
}

// builtinOf says whose agent type agent is when the user cannot edit it
// on stack prof: "a built-in agent type of Claude Code", "an agent of
// plugin entire-engineering" (Claude Code names a plugin's agents
// plugin:…:name); "" for an agent of the user's.
func builtinOf(prof *stack.Profile, agent string) string {
	if prof.Format == "claude-code" {
		if plugin, _, ok := strings.Cut(agent, ":"); ok {
			return "an agent of plugin " + plugin
		}
	}
	for _, b := range builtinAgents[prof.Format] {
		if b == agent {
			return "a built-in agent type of " + prof.Name
		}
	}
	return ""
}

// IsBuiltinAgent reports whether agent is a sub-agent type that stack
// format provides itself (Claude Code's general-purpose, Explore, Plan…),
// whose prompt the user cannot edit.
func IsBuiltinAgent(format, agent string) bool {
	prof := stack.Of(format)
	return prof != nil && builtinOf(prof, agent) != ""
}
