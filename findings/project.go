package findings

import (
	"strings"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// AgentsFile is the path of agents.yaml in a project snapshot.
const AgentsFile = snapshot.AgentsFile

// ForkInstructionsFile is the runtime's own rules for forking.
const ForkInstructionsFile = snapshot.ForkInstructionsFile

// Project is what the audit needs from a run's stored project snapshot, as
// package snapshot reads it (leniently: the run already ran, so a snapshot
// that does not parse only loses fix lines, never the audit), plus the fork
// depth cap that applied to the run.
type Project struct {
	*snapshot.Project
	// MaxForkDepth is the depth cap in force for the run: agents.yaml's
	// maxForkDepth, replaced by the depth the run recorded in its options
	// when they differ (a caller's override). YAMLMaxForkDepth keeps
	// agents.yaml's value (snapshot.Project.MaxForkDepth).
	MaxForkDepth     int
	YAMLMaxForkDepth int
	// Imported is set for a run another tool recorded (DESIGN §8,
	// "Imported runs"): it has no agents.yaml, and a fix goes to the file
	// that holds the agent's instructions (Instructions: agent → snapshot
	// path), else to "the instructions of agent X" located at Source, the
	// file the run was imported from.
	Imported     bool
	Instructions map[string]string
	Source       string
}

// imported marks p as the project of run r when r came from another tool
// without an agents.yaml (a run of ours exported and imported back keeps
// its project, and its fixes stay there).
func (p *Project) imported(r *record.Run) {
	if r.Source.IsInspect() || p.Files.File(AgentsFile) != nil {
		return
	}
	p.Imported, p.Instructions, p.Source = true, r.Options.Instructions, r.Source.Path
}

// PromptPath is where agent's instructions are: its role file, or for an
// imported run the file the source names (or "the instructions of agent X").
func (p *Project) PromptPath(agent string) string {
	if !p.Imported {
		return p.Project.PromptPath(agent)
	}
	if f := p.Instructions[agent]; f != "" && p.Files.File(f) != nil {
		return f
	}
	return "the instructions of agent " + agent
}

// importedLocation is PromptLocation for an imported run: the line of the
// agent's instruction file that mentions words (else its last line), or
// "the instructions of agent X" at the imported file.
func (p *Project) importedLocation(agent string, words ...string) Location {
	path := p.Instructions[agent]
	if lines := p.Lines(path); path != "" && lines != nil {
		return Location{Path: path, Line: lineWith(lines, words)}
	}
	return Location{Label: "the instructions of agent " + agent, Source: p.Source}
}

// ParseProject reads the agents.yaml of a run's snapshot.
func ParseProject(snap record.Project) *Project {
	s := snapshot.Read(snap)
	return &Project{Project: s, MaxForkDepth: s.MaxForkDepth, YAMLMaxForkDepth: s.MaxForkDepth}
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
	if p.Imported {
		return p.importedLocation(agent)
	}
	return Location{Path: AgentsFile, Line: p.AgentLine(agent)}
}

// ForkLocation is the agent's fork: line, or its entry when it has none.
func (p *Project) ForkLocation(agent string) Location {
	if p.Imported {
		return p.importedLocation(agent, "agent", "task", "delegat", "parallel")
	}
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
	if p.Imported {
		return p.importedLocation(agent, words...)
	}
	path := p.PromptPath(agent)
	lines := p.Lines(path)
	if lines == nil {
		return p.EntryLocation(agent)
	}
	return Location{Path: path, Line: lineWith(lines, words)}
}

// lineWith is the 1-based number of the first line that mentions any of
// words (case-insensitive), else of the last line.
func lineWith(lines []string, words []string) int {
	for i, l := range lines {
		low := strings.ToLower(l)
		for _, w := range words {
			if w != "" && strings.Contains(low, strings.ToLower(w)) {
				return i + 1
			}
		}
	}
	return len(lines)
}
