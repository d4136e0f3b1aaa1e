// Package project loads a multi-agent project folder (DESIGN §3): agents.yaml,
// the role files, house rules, fork instructions and command tools. Every
// problem it finds is a Diagnostic naming the file, line and key, so a user
// can go straight to the line that needs the fix.
package project

import (
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/snapshot"
)

// Defaults for the run options of agents.yaml.
const (
	DefaultModel        = "gpt-4.1-mini"
	DefaultMaxForkDepth = snapshot.DefaultMaxForkDepth
	DefaultMaxSteps     = 40
	DefaultToolTimeout  = 30 * time.Second
)

// The built-in tool names (written once, in snapshot). All of them work
// inside the project's workspace.
const (
	ToolListDir   = snapshot.ToolListDir
	ToolFindFiles = snapshot.ToolFindFiles
	ToolReadFile  = snapshot.ToolReadFile
	ToolWriteFile = snapshot.ToolWriteFile
)

// BuiltinTools lists the built-in tools in a fixed order.
var BuiltinTools = []string{ToolListDir, ToolFindFiles, ToolReadFile, ToolWriteFile}

// IsResearchBuiltin reports whether name is a built-in research tool (one that
// only reads: list_dir, find_files, read_file).
func IsResearchBuiltin(name string) bool {
	return name == ToolListDir || name == ToolFindFiles || name == ToolReadFile
}

// Project is a loaded project: the parsed agents.yaml, the prompt texts it
// refers to and the snapshot stored with every run.
type Project struct {
	Dir       string // the project folder, as given
	Name      string // the folder's base name
	Workspace string // absolute path of the workspace folder the built-in tools see

	Model        string // default model of every agent
	MaxForkDepth int    // at this depth the fork tool and fork instructions are withdrawn
	MaxSteps     int    // model calls per conversation before it ends with status error

	Agents []*Agent       // in declared order; the first one starts the trunk
	Tools  []*CommandTool // command tools, in declared order
	byName map[string]*Agent

	HouseRules       string   // agents/house-rules.md, "" when absent
	ForkInstructions string   // agents/fork-instructions.md
	ForkTopics       []string // agents/fork-<topic>-instructions.md texts, sorted by file name

	// Files is the snapshot of agents.yaml and every prompt file read, sorted
	// by path; it is stored with each run.
	Files []record.File

	// Warnings are the problems that do not stop the project from running.
	Warnings []Diagnostic
}

// Agent is one entry of agents.yaml's agents list.
type Agent struct {
	Name        string
	Description string   // a routing condition: it describes transfer_to_<name>
	Model       string   // resolved: the agent's own model or the project default
	PromptPath  string   // slash path of the role file, relative to the project folder
	Role        string   // the role file's text
	Tools       []string // tool names (built-ins and command tools), in declared order
	Handoffs    []string // agent names this agent may transfer to, in declared order
	Fork        *Fork    // nil: this agent has no fork tool
	Line        int      // line of the agent's entry in agents.yaml
}

// Fork is an agent's fork: setting.
type Fork struct {
	// Agents are the agents a branch may run; nil means any declared agent
	// (fork: true or fork: {}).
	Agents []string
	// MaxBranches caps the branches of one call; 0 means no cap.
	MaxBranches int
}

// Allows reports whether a branch may run agent name.
func (f *Fork) Allows(name string) bool {
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

// CommandTool is a tool backed by a program run in the project folder: its
// JSON arguments go to stdin and its stdout is the result.
type CommandTool struct {
	Name        string
	Description string
	ReadOnly    bool     // a research tool
	Command     []string // argv; a relative program path is resolved against the project folder
	Parameters  map[string]any
	Timeout     time.Duration
	// MaxResult caps the bytes of its result kept and sent to the model
	// (maxResult:; 0 = the default, 256 KiB); the rest is cut with a note.
	MaxResult int
	// Env names secret-looking environment variables (*_KEY, *_TOKEN,
	// *_SECRET, *PASSWORD*) the tool may see (env:); others are removed.
	Env  []string
	Line int
}

// Agent returns the agent called name, or nil.
func (p *Project) Agent(name string) *Agent {
	return p.byName[name]
}

// CommandTool returns the command tool called name, or nil.
func (p *Project) CommandTool(name string) *CommandTool {
	for _, t := range p.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// AgentNames lists the agents' names in declared order.
func (p *Project) AgentNames() []string {
	names := make([]string, len(p.Agents))
	for i, a := range p.Agents {
		names[i] = a.Name
	}
	return names
}

// Models lists the models the agents use, deduplicated, in declared order.
func (p *Project) Models() []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range p.Agents {
		if !seen[a.Model] {
			seen[a.Model] = true
			out = append(out, a.Model)
		}
	}
	return out
}

// Severity tells an error (the project does not run) from a warning.
type Severity int

// Severities.
const (
	SeverityError Severity = iota
	SeverityWarning
)

func (s Severity) String() string {
	if s == SeverityWarning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one load error or warning. Code is stable (handoff.unknown,
// fork.uninstructed, ...); Message says what is wrong and what to do.
type Diagnostic struct {
	Severity Severity
	Code     string
	File     string // slash path relative to the project folder
	Line     int    // 1-based; 0 when the file itself is the subject
	Key      string // the key in the file, e.g. agents[1].handoffs[0]
	Message  string
}

// String renders d as "file:line: key: severity code: message".
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
	}
	b.WriteString(": ")
	if d.Key != "" {
		b.WriteString(d.Key)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%s %s: %s", d.Severity, d.Code, d.Message)
	return b.String()
}

// LoadError is returned by Load when the project has errors; it lists all of
// them (and the warnings found on the way).
type LoadError struct {
	Dir         string
	Diagnostics []Diagnostic // errors first, then warnings, each in file order
}

func (e *LoadError) Error() string {
	n := 0
	for _, d := range e.Diagnostics {
		if d.Severity == SeverityError {
			n++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "project %s has %d error", e.Dir, n)
	if n != 1 {
		b.WriteString("s")
	}
	if n == 1 {
		b.WriteString("; fix it and run again:")
	} else {
		b.WriteString("; fix them and run again:")
	}
	for _, d := range e.Diagnostics {
		b.WriteString("\n  ")
		b.WriteString(d.String())
	}
	return b.String()
}

func storeFile(path, sum, content string) record.File {
	return record.File{Path: path, SHA256: sum, Content: content}
}
