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
	path := p.PromptPath(agent)
	lines := p.Lines(path)
	if lines == nil {
		return p.EntryLocation(agent)
	}
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
