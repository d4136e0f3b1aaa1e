package runtime

import (
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/runtime/project"
	openai "github.com/sashabaranov/go-openai"
)

// Context modes of a fork call.
const (
	ContextInherit = "inherit"
	ContextCompact = "compact"
	ContextNone    = "none"
)

// ForkTool is the name of the fork tool; hand-off tools are HandoffPrefix+agent.
const (
	ForkTool      = "fork"
	HandoffPrefix = "transfer_to_"
)

// canFork reports whether agent a gets the fork tool (and the fork
// instructions) at depth.
func canFork(p *project.Project, a *project.Agent, depth int) bool {
	return a.Fork != nil && depth < p.MaxForkDepth
}

// systemPrompt composes an agent's system prompt at a depth: house rules,
// its role file, then — only while it may fork — fork-instructions.md and
// the fork-<topic> files.
func systemPrompt(p *project.Project, a *project.Agent, depth int) string {
	var parts []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	add(p.HouseRules)
	add(a.Role)
	if canFork(p, a, depth) {
		add(p.ForkInstructions)
		for _, t := range p.ForkTopics {
			add(t)
		}
	}
	return strings.Join(parts, "\n\n")
}

// toolArray builds an agent's fixed tool array at a depth: its own tools in
// declared order, one transfer_to_<name> per hand-off, then fork if allowed.
func toolArray(p *project.Project, a *project.Agent, depth int) []openai.Tool {
	var out []openai.Tool
	fn := func(name, desc string, params map[string]any) {
		out = append(out, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: name, Description: desc, Parameters: params}})
	}
	for _, t := range a.Tools {
		if ct := p.CommandTool(t); ct != nil {
			fn(ct.Name, ct.Description, ct.Parameters)
			continue
		}
		desc, params := builtinSchema(t)
		fn(t, desc, params)
	}
	for _, h := range a.Handoffs {
		target := p.Agent(h)
		desc := "Hand the whole conversation to " + h + "; it answers from then on."
		if target != nil && target.Description != "" {
			desc = target.Description
		}
		fn(HandoffPrefix+h, desc, obj(props{
			"reason": {"type": "string", "description": "Why the conversation moves, in one sentence."},
		}))
	}
	if canFork(p, a, depth) {
		fn(ForkTool, forkDescription, forkSchema(p, a))
	}
	return out
}

type props map[string]map[string]any

func obj(ps props, required ...string) map[string]any {
	m := map[string]any{"type": "object", "properties": ps}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

const forkDescription = "Run independent parts of the work at the same time, each in a branch of its own. " +
	"Every branch does its assignment and its final message comes back; all of them come back together as this call's result."

func builtinSchema(name string) (string, map[string]any) {
	switch name {
	case project.ToolListDir:
		return "List one folder of the workspace (not recursive): sub-folders end in /, files show their size.",
			obj(props{"path": {"type": "string", "description": "Folder relative to the workspace; omit for its root."}})
	case project.ToolFindFiles:
		return "Find files whose path contains a plain substring (case-insensitive, no globs).",
			obj(props{
				"pattern": {"type": "string", "description": "Substring of the path, e.g. \"eu\" or \".md\"."},
				"path":    {"type": "string", "description": "Folder to search in; omit for the whole workspace."},
			}, "pattern")
	case project.ToolReadFile:
		return "Read a text file of the workspace, whole or a range of lines.",
			obj(props{
				"path":       {"type": "string", "description": "File relative to the workspace."},
				"start_line": {"type": "integer", "description": "First line to read, from 1."},
				"end_line":   {"type": "integer", "description": "Last line to read, inclusive."},
			}, "path")
	case project.ToolWriteFile:
		return "Write a text file in the workspace, replacing it if it exists; folders are created.",
			obj(props{
				"path":    {"type": "string", "description": "File relative to the workspace."},
				"content": {"type": "string", "description": "The whole new content."},
			}, "path", "content")
	}
	return "", obj(props{})
}

// forkAgents lists the agents a branch of a's forks may run: fork.agents, or
// every declared agent for fork: true.
func forkAgents(p *project.Project, a *project.Agent) []string {
	if a.Fork.Agents != nil {
		return append([]string(nil), a.Fork.Agents...)
	}
	return p.AgentNames()
}

func forkSchema(p *project.Project, a *project.Agent) map[string]any {
	agents := forkAgents(p, a)
	var lines []string
	for _, n := range agents {
		d := "no description"
		if t := p.Agent(n); t != nil && t.Description != "" {
			d = t.Description
		}
		lines = append(lines, n+": "+d)
	}
	agentDesc := "The agent that runs this branch. " + strings.Join(lines, " | ")
	if a.Fork.Allows(a.Name) {
		agentDesc += ". Omit it to run the branch as yourself (" + a.Name + ")."
	}
	branch := obj(props{
		"name":         {"type": "string", "description": "Short unique name of the branch, e.g. eu (letters, digits, -, _, .)."},
		"instructions": {"type": "string", "description": "The branch's whole assignment, including what its final message must contain."},
		"agent":        {"type": "string", "enum": agents, "description": agentDesc},
	}, "name", "instructions")
	if !a.Fork.Allows(a.Name) {
		branch["required"] = []string{"name", "instructions", "agent"}
	}
	arr := map[string]any{"type": "array", "minItems": 1, "items": branch,
		"description": "One entry per branch; they run at the same time and cannot see each other."}
	if a.Fork.MaxBranches > 0 {
		arr["maxItems"] = a.Fork.MaxBranches
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"branches": arr,
			"context": map[string]any{"type": "string", "enum": []string{ContextInherit, ContextCompact, ContextNone},
				"description": "What every branch starts from: inherit = this conversation so far (the default); compact = the same without tool calls and results; none = only its instructions."},
		},
		"required": []string{"branches"},
	}
}

// sortedKeys is used where map order would leak into output.
func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
