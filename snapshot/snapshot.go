// Package snapshot reads the copy of a project that is stored with each
// run (record.Project: agents.yaml and the prompt files): the agents with
// their descriptions, models, tools, hand-offs and fork settings, the path
// of each agent's role file, and the line of each agent's entry and keys in
// agents.yaml. The audit points its fixes at those lines; ask finds the
// role file it replaces.
//
// It reads leniently: the run already ran, so a snapshot whose agents.yaml
// is missing or does not parse gives a Project with what could be read and
// the reason in Err, never a failure. The runtime's own loader
// (runtime/project) is the strict one; it takes the file names and the
// default role-file path from here, so both agree.
//
// It imports nothing of ours but record.
package snapshot

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/inspect-dev/inspect/record"
	"go.yaml.in/yaml/v3"
)

// File names inside a project (slash paths, relative to its folder).
const (
	// AgentsFile declares the agents.
	AgentsFile = "agents.yaml"
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
	ToolListDir   = "list_dir"
	ToolFindFiles = "find_files"
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
)

// IsBuiltinTool reports whether name is one of the built-in workspace tools.
func IsBuiltinTool(name string) bool {
	return name == ToolListDir || name == ToolFindFiles || name == ToolReadFile || name == ToolWriteFile
}

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
	// Err says why agents.yaml could not be read (ErrNoAgentsFile, or the
	// YAML error); nil when it was. Whatever was read before the problem is
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

// Read reads the agents.yaml of a snapshot.
func Read(snap record.Project) *Project {
	p := &Project{Files: snap, MaxForkDepth: DefaultMaxForkDepth}
	f := snap.File(AgentsFile)
	if f == nil {
		p.Err = ErrNoAgentsFile
		return p
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(f.Content), &doc); err != nil {
		p.Err = fmt.Errorf("%s: %w", AgentsFile, err)
		return p
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		p.Err = fmt.Errorf("%s is not a mapping of keys (model, agents, …)", AgentsFile)
		return p
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch key.Value {
		case "model":
			p.Model, p.ModelLine = val.Value, key.Line
		case "maxForkDepth":
			var n int
			if val.Decode(&n) == nil {
				p.MaxForkDepth, p.MaxForkDepthLine = n, key.Line
			}
		case "agents":
			for _, item := range val.Content {
				if a := readAgent(item); a != nil {
					p.Agents = append(p.Agents, a)
				}
			}
		case "tools":
			for _, item := range val.Content {
				if t := readTool(item); t != nil {
					p.Tools = append(p.Tools, t)
				}
			}
		}
	}
	return p
}

func readAgent(item *yaml.Node) *Agent {
	if item.Kind != yaml.MappingNode {
		return nil
	}
	a := &Agent{Line: item.Line}
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, val := item.Content[i], item.Content[i+1]
		switch key.Value {
		case "name":
			a.Name, a.Line = val.Value, key.Line
		case "description":
			a.Description, a.DescriptionLine = val.Value, key.Line
		case "model":
			a.Model, a.ModelLine = val.Value, key.Line
		case "prompt":
			if val.Kind == yaml.ScalarNode && val.Value != "" {
				a.Prompt = path.Clean(filepath.ToSlash(val.Value)) // as the runtime reads it
			}
			a.PromptLine = key.Line
		case "tools":
			_ = val.Decode(&a.Tools)
			a.ToolsLine = key.Line
		case "handoffs":
			_ = val.Decode(&a.Handoffs)
			a.HandoffsLine = key.Line
		case "fork":
			a.ForkLine = key.Line
			switch val.Kind {
			case yaml.ScalarNode:
				var b bool
				if val.Decode(&b) == nil && b {
					a.Fork = &Fork{}
				}
			case yaml.MappingNode:
				var fc struct {
					Agents      []string `yaml:"agents"`
					MaxBranches int      `yaml:"maxBranches"`
				}
				_ = val.Decode(&fc)
				a.Fork = &Fork{Agents: fc.Agents, MaxBranches: fc.MaxBranches}
			}
		}
	}
	if a.Name == "" {
		return nil
	}
	if a.Prompt == "" {
		a.Prompt = PromptPath(a.Name)
	}
	return a
}

func readTool(item *yaml.Node) *Tool {
	if item.Kind != yaml.MappingNode {
		return nil
	}
	t := &Tool{Line: item.Line}
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, val := item.Content[i], item.Content[i+1]
		switch key.Value {
		case "name":
			t.Name, t.Line = val.Value, key.Line
		case "description":
			t.Description = val.Value
		case "readOnly":
			_ = val.Decode(&t.ReadOnly)
		}
	}
	if t.Name == "" {
		return nil
	}
	return t
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
