// Package snapshot reads the copy of a project that is stored with each
// run (record.Project: agents.yaml and the prompt files): the agents with
// their descriptions, models, tools, hand-offs and fork settings, the path
// of each agent's role file, and the line of each agent's entry and keys in
// agents.yaml. The audit points its fixes at those lines; ask finds the
// role file it replaces.
//
// It reads leniently: the run already ran, so a snapshot whose agents.yaml
// is missing or does not parse gives a Project with what could be read and
// the reason in Err, never a failure. The walk over agents.yaml is
// internal/agentsyaml's, in its Lenient mode; the runtime's own loader
// (runtime/project) makes the same walk in Strict mode and takes the file
// names and the default role-file path from here, so both agree.
//
// It imports nothing of ours but record and internal/agentsyaml.
package snapshot

import (
	"errors"
	"path"
	"path/filepath"
	"strings"

	"github.com/inspect-dev/inspect/internal/agentsyaml"
	"github.com/inspect-dev/inspect/record"
)

// File names inside a project (slash paths, relative to its folder).
const (
	// AgentsFile declares the agents.
	AgentsFile = agentsyaml.FileName
	// HouseRulesFile is sent first in every agent's system prompt (optional).
	HouseRulesFile = "agents/house-rules.md"
	// ForkInstructionsFile is the runtime's own rules for forking.
	ForkInstructionsFile = "agents/fork-instructions.md"
)

// DefaultMaxForkDepth is the fork depth cap when agents.yaml gives none.
const DefaultMaxForkDepth = 2

// The built-in workspace tools (DESIGN §3): every project has them, and
// their arguments name workspace paths (`path`; find_files also takes a
// `pattern`, a plain substring of the path).
const (
	ToolListDir   = agentsyaml.ToolListDir
	ToolFindFiles = agentsyaml.ToolFindFiles
	ToolReadFile  = agentsyaml.ToolReadFile
	ToolWriteFile = agentsyaml.ToolWriteFile
)

// IsBuiltinTool reports whether name is one of the built-in workspace tools.
func IsBuiltinTool(name string) bool { return agentsyaml.IsBuiltinTool(name) }

// PromptPath is the role file of an agent whose entry has no prompt:,
// agents/<name>.md.
func PromptPath(agent string) string { return "agents/" + agent + ".md" }

// ErrNoAgentsFile is Project.Err when the snapshot holds no agents.yaml.
var ErrNoAgentsFile = errors.New("the project snapshot has no " + AgentsFile)

// Project is what a snapshot's agents.yaml declares, with line numbers.
// A line is 0 when the key is absent.
type Project struct {
	// Files is the snapshot itself.
	Files record.Project
	// Err says why agents.yaml could not be read (ErrNoAgentsFile,
	// agentsyaml.ErrNotMapping, or the YAML error); nil when it was. Whatever was read before the problem is
	// kept.
	Err error
	// Model is the default model, "" when absent.
	Model     string
	ModelLine int
	// MaxForkDepth is agents.yaml's maxForkDepth (DefaultMaxForkDepth when absent).
	MaxForkDepth     int
	MaxForkDepthLine int
	// Agents are in declared order; an entry without a name is skipped.
	Agents []*Agent
	// Tools are the command tools, in declared order.
	Tools []*Tool
}

// Agent is one agent's entry in agents.yaml.
type Agent struct {
	Name string
	// Line is the line of the entry's name: key.
	Line        int
	Description string
	Model       string
	// Prompt is the role file's slash path: prompt: (cleaned, as the
	// runtime reads it), else PromptPath(Name).
	Prompt   string
	Tools    []string
	Handoffs []string
	// Fork is nil when the agent cannot fork.
	Fork *Fork
	// The lines of the entry's keys.
	DescriptionLine, ModelLine, PromptLine, ToolsLine, HandoffsLine, ForkLine int
}

// Fork is an agent's fork: setting.
type Fork struct {
	// Agents a branch may run; nil = any declared agent (fork: true or {}).
	Agents []string
	// MaxBranches is the most branches one fork call may start; 0 = no cap given.
	MaxBranches int
}

// Allows reports whether a branch may run agent name.
func (f *Fork) Allows(name string) bool {
	if f == nil {
		return false
	}
	if f.Agents == nil {
		return true
	}
	for _, a := range f.Agents {
		if a == name {
			return true
		}
	}
	return false
}

// Tool is a command tool declared in agents.yaml.
type Tool struct {
	Name        string
	Description string
	// ReadOnly marks a research tool.
	ReadOnly bool
	// Line is the line of the entry's name: key.
	Line int
}

// Read reads the agents.yaml of a snapshot, leniently (agentsyaml.Lenient:
// the walk runtime/project makes strictly).
func Read(snap record.Project) *Project {
	p := &Project{Files: snap, MaxForkDepth: DefaultMaxForkDepth}
	f := snap.File(AgentsFile)
	if f == nil {
		p.Err = ErrNoAgentsFile
		return p
	}
	w, err := agentsyaml.Walk([]byte(f.Content), agentsyaml.Options{Mode: agentsyaml.Lenient})
	if err != nil {
		p.Err = err
		return p
	}
	if w.ModelSet {
		p.Model, p.ModelLine = w.Model, w.ModelKeyLine
	}
	if w.MaxForkDepthSet {
		p.MaxForkDepth, p.MaxForkDepthLine = w.MaxForkDepth, w.MaxForkDepthKeyLine
	}
	for _, e := range w.Agents {
		a := &Agent{Name: e.Name, Line: e.NameLine, Description: e.Description, Model: e.Model, Prompt: PromptPath(e.Name),
			Tools: e.Tools, Handoffs: e.Handoffs,
			DescriptionLine: e.DescriptionKeyLine, ModelLine: e.ModelKeyLine, PromptLine: e.PromptKeyLine,
			ToolsLine: e.ToolsKeyLine, HandoffsLine: e.HandoffsKeyLine, ForkLine: e.ForkKeyLine}
		if e.Prompt != "" {
			a.Prompt = path.Clean(filepath.ToSlash(e.Prompt)) // as the runtime reads it
		}
		if e.Fork != nil {
			a.Fork = &Fork{Agents: e.Fork.Agents, MaxBranches: e.Fork.MaxBranches}
		}
		p.Agents = append(p.Agents, a)
	}
	for _, e := range w.Tools {
		p.Tools = append(p.Tools, &Tool{Name: e.Name, Description: e.Description, ReadOnly: e.ReadOnly, Line: e.NameLine})
	}
	return p
}

// Agent returns the entry of agent name, or nil.
func (p *Project) Agent(name string) *Agent {
	for _, a := range p.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AgentNames returns the declared agents' names, in order.
func (p *Project) AgentNames() []string {
	out := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		out[i] = a.Name
	}
	return out
}

// PromptPath is agent's role file: its entry's, or PromptPath(agent) when
// agents.yaml does not declare it.
func (p *Project) PromptPath(agent string) string {
	if a := p.Agent(agent); a != nil {
		return a.Prompt
	}
	return PromptPath(agent)
}

// Lines returns the lines of the snapshot's file at path (without their
// line ends; a last newline ends the last line, it does not start one), or
// nil when the snapshot lacks the file.
func (p *Project) Lines(path string) []string {
	f := p.Files.File(path)
	if f == nil {
		return nil
	}
	return strings.Split(strings.TrimRight(f.Content, "\n"), "\n")
}
