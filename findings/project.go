package findings

import (
	"strings"

	"github.com/inspect-dev/inspect/record"
	"go.yaml.in/yaml/v3"
)

// AgentsFile is the path of agents.yaml in a project snapshot.
const AgentsFile = "agents.yaml"

// ForkInstructionsFile is the runtime's own rules for forking.
const ForkInstructionsFile = "agents/fork-instructions.md"

// Project is what the audit needs from a run's stored project snapshot:
// each agent's entry with its line in agents.yaml, the prompt files, and
// the command tools. It is read leniently: the run already ran, so a
// snapshot that does not parse only loses fix lines, never the audit.
type Project struct {
	// Agents are in declared order.
	Agents []*AgentConfig
	// MaxForkDepth is the run option (2 when absent); MaxForkDepthLine its
	// line in agents.yaml, 0 when absent. Audit replaces MaxForkDepth with
	// the depth the run recorded in its options when they differ (a caller's
	// override), and keeps agents.yaml's value in YAMLMaxForkDepth.
	MaxForkDepth     int
	MaxForkDepthLine int
	YAMLMaxForkDepth int
	// ReadOnlyTools are the command tools marked readOnly.
	ReadOnlyTools map[string]bool
	// Files is the snapshot.
	Files record.Project
}

// AgentConfig is one agent's entry of agents.yaml.
type AgentConfig struct {
	Name string
	// Line is the line of the entry's "- name:" in agents.yaml.
	Line int
	// Prompt is the role file's path (agents/<name>.md unless prompt: says).
	Prompt string
	// Tools, Handoffs are as declared.
	Tools    []string
	Handoffs []string
	// Fork is nil when the agent cannot fork. ForkAgents nil means any agent.
	Fork       *ForkConfig
	ToolsLine  int
	ForkLine   int
	HandoffsLn int
}

// ForkConfig is an agent's fork: setting.
type ForkConfig struct {
	// Agents a branch may run; nil = any declared agent.
	Agents      []string
	MaxBranches int
}

// Allows reports whether a branch may run agent name.
func (f *ForkConfig) Allows(name string) bool {
	if f == nil {
		return false
	}
	if f.Agents == nil {
		return true
	}
	return contains(f.Agents, name)
}

// ParseProject reads agents.yaml of a run's snapshot.
func ParseProject(snap record.Project) *Project {
	p := &Project{MaxForkDepth: 2, ReadOnlyTools: map[string]bool{}, Files: snap}
	f := snap.File(AgentsFile)
	if f == nil {
		return p
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(f.Content), &doc); err != nil || len(doc.Content) == 0 {
		return p
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return p
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		switch key.Value {
		case "maxForkDepth":
			var n int
			if val.Decode(&n) == nil {
				p.MaxForkDepth, p.MaxForkDepthLine = n, key.Line
			}
		case "agents":
			for _, item := range val.Content {
				if a := parseAgent(item); a != nil {
					p.Agents = append(p.Agents, a)
				}
			}
		case "tools":
			for _, item := range val.Content {
				var t struct {
					Name     string `yaml:"name"`
					ReadOnly bool   `yaml:"readOnly"`
				}
				if item.Decode(&t) == nil && t.ReadOnly {
					p.ReadOnlyTools[t.Name] = true
				}
			}
		}
	}
	return p
}

func parseAgent(item *yaml.Node) *AgentConfig {
	if item.Kind != yaml.MappingNode {
		return nil
	}
	a := &AgentConfig{Line: item.Line}
	for i := 0; i+1 < len(item.Content); i += 2 {
		key, val := item.Content[i], item.Content[i+1]
		switch key.Value {
		case "name":
			a.Name = val.Value
			a.Line = key.Line
		case "prompt":
			a.Prompt = val.Value
		case "tools":
			_ = val.Decode(&a.Tools)
			a.ToolsLine = key.Line
		case "handoffs":
			_ = val.Decode(&a.Handoffs)
			a.HandoffsLn = key.Line
		case "fork":
			a.ForkLine = key.Line
			switch val.Kind {
			case yaml.ScalarNode:
				var b bool
				if val.Decode(&b) == nil && b {
					a.Fork = &ForkConfig{}
				}
			case yaml.MappingNode:
				var fc struct {
					Agents      []string `yaml:"agents"`
					MaxBranches int      `yaml:"maxBranches"`
				}
				_ = val.Decode(&fc)
				a.Fork = &ForkConfig{Agents: fc.Agents, MaxBranches: fc.MaxBranches}
			}
		}
	}
	if a.Name == "" {
		return nil
	}
	if a.Prompt == "" {
		a.Prompt = "agents/" + a.Name + ".md"
	}
	return a
}

// Agent returns the entry of agent name, or nil.
func (p *Project) Agent(name string) *AgentConfig {
	for _, a := range p.Agents {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// AgentLine is the line of agent name's entry in agents.yaml, or 0.
func (p *Project) AgentLine(name string) int {
	if a := p.Agent(name); a != nil {
		return a.Line
	}
	return 0
}

// EntryLocation is the agent's entry in agents.yaml (the file itself when
// the agent is not declared there).
func (p *Project) EntryLocation(agent string) Location {
	return Location{Path: AgentsFile, Line: p.AgentLine(agent)}
}

// ForkLocation is the agent's fork: line, or its entry when it has none.
func (p *Project) ForkLocation(agent string) Location {
	if a := p.Agent(agent); a != nil && a.ForkLine > 0 {
		return Location{Path: AgentsFile, Line: a.ForkLine}
	}
	return p.EntryLocation(agent)
}

// PromptLocation is where a prompt line about words goes in agent's role
// file: the first line that mentions any of words (case-insensitive), else
// the file's last line (add the new line after it). When the snapshot lacks
// the role file, the agent's agents.yaml entry.
func (p *Project) PromptLocation(agent string, words ...string) Location {
	a := p.Agent(agent)
	path := "agents/" + agent + ".md"
	if a != nil {
		path = a.Prompt
	}
	f := p.Files.File(path)
	if f == nil {
		return p.EntryLocation(agent)
	}
	lines := strings.Split(strings.TrimRight(f.Content, "\n"), "\n")
	for i, l := range lines {
		low := strings.ToLower(l)
		for _, w := range words {
			if w != "" && strings.Contains(low, strings.ToLower(w)) {
				return Location{Path: path, Line: i + 1}
			}
		}
	}
	return Location{Path: path, Line: len(lines)}
}

// PromptPath is agent's role file path.
func (p *Project) PromptPath(agent string) string {
	if a := p.Agent(agent); a != nil {
		return a.Prompt
	}
	return "agents/" + agent + ".md"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
