// Package agentsyaml walks a project's agents.yaml (DESIGN §3) for both of
// its readers, so they cannot disagree on what the file says:
//
//   - runtime/project loads a project to run it, in Strict mode: every
//     problem is a Problem with its line, key and code, and an entry the
//     walk refuses (an agent declared twice, a tool without a command) is
//     dropped;
//   - snapshot reads the copy stored with a run, in Lenient mode: the run
//     already ran, so nothing is reported and every named entry is kept
//     with the lines of its keys, for the audit's fixes.
//
// Both modes read a value the same way (a model name, a whole number, a
// list of names, a fork setting); the walk stops early only when the file
// as a whole cannot be read (Walk's error). Checks that need more than the
// file — role files, the workspace folder, a tool's program, names that
// refer to other entries — are the caller's.
//
// It imports nothing of ours.
package agentsyaml

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// FileName is the file this package reads, as diagnostics name it.
const FileName = "agents.yaml"

// The built-in workspace tools (DESIGN §3): every project has them, and a
// command tool may not take their names.
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

// Mode is how a walk treats what it cannot use.
type Mode int

const (
	// Strict reports every problem to Options.Report and drops the agent
	// or tool entries it reports as errors (so a name declared twice is
	// kept once and later checks see only the entries that can run).
	Strict Mode = iota
	// Lenient reports nothing and keeps every entry that has a name.
	Lenient
)

// Severity tells an error (the project does not run) from a warning.
type Severity int

// Severities.
const (
	Error Severity = iota
	Warning
)

// Problem is one thing a Strict walk found wrong with the file.
type Problem struct {
	Severity Severity
	// Line is 1-based; 0 when the file itself is the subject.
	Line int
	// Key is the key in the file, e.g. agents[1].handoffs[0]; "" for the
	// file itself.
	Key string
	// Code is stable (yaml.shape, agent.duplicate, ...).
	Code string
	// Message says what is wrong and what to do.
	Message string
}

// ErrNotMapping is Walk's error when the file is empty or its top level is
// not a mapping of keys.
var ErrNotMapping = errors.New(FileName + " is not a mapping of keys (model, agents, …)")

// Options are how Walk reads and where its problems go.
type Options struct {
	Mode Mode
	// Report receives each problem as the walk finds it, in the walk's
	// order (the keys of the top level, each command tool as it comes,
	// then the agents). Strict mode only; nil drops them.
	Report func(Problem)
	// Tool, if set, is called in Strict mode for each command tool the walk
	// accepts, as it accepts it, so that what the caller reports about it
	// (its program is missing) comes in the same order as the walk's own
	// problems.
	Tool func(*Tool)
}

// File is what agents.yaml declares. A line is 0 when its key is absent.
type File struct {
	// Model is the default model; ModelSet says the key is present (Model
	// is "" when its value is not a model name).
	Model        string
	ModelSet     bool
	ModelKeyLine int
	// MaxForkDepth is the value of maxForkDepth when it is a whole number
	// ≥ 0 (MaxForkDepthSet); else unset.
	MaxForkDepth        int
	MaxForkDepthSet     bool
	MaxForkDepthKeyLine int
	// MaxSteps is the value of maxSteps when it is a whole number > 0
	// (MaxStepsSet).
	MaxSteps    int
	MaxStepsSet bool
	// Workspace is the value of workspace: ("" when absent or not a single
	// value); WorkspaceLine is the line of that value, 0 when absent.
	Workspace     string
	WorkspaceLine int
	// Agents are in declared order.
	Agents []*Agent
	// Tools are the command tools, in declared order.
	Tools []*Tool
}

// Agent is one entry of the agents: list.
type Agent struct {
	// Key is the entry's key, agents[i], counting every entry of the list.
	Key string
	// Line is the line of the entry; NameLine the line of its name: key
	// (Line when it has none).
	Line, NameLine int
	Name           string
	// Description is the value as written (not trimmed).
	Description string
	Model       string
	// Prompt is prompt:'s value as written ("" when absent); PromptGiven
	// says the key is present, PromptLine is the line of its value.
	Prompt      string
	PromptGiven bool
	PromptLine  int
	// Tools and Handoffs are the names listed, each with its line in
	// ToolLines and HandoffLines.
	Tools, Handoffs         []string
	ToolLines, HandoffLines []int
	// Fork is nil when the agent cannot fork (fork: absent or false).
	Fork *Fork
	// The lines of the entry's keys, 0 when absent.
	DescriptionKeyLine, ModelKeyLine, PromptKeyLine, ToolsKeyLine, HandoffsKeyLine, ForkKeyLine int
}

// Fork is an agent's fork: setting.
type Fork struct {
	// Agents a branch may run; nil = any declared agent (fork: true or {}).
	Agents []string
	// AgentLines are the lines of Agents' names.
	AgentLines []int
	// MaxBranches is the most branches one fork call may start; 0 = no cap given.
	MaxBranches int
}

// Tool is one entry of the tools: list (a command tool).
type Tool struct {
	// Key is the entry's key, tools[i].
	Key string
	// Line is the line of the entry; NameLine the line of its name: key
	// (Line when it has none); CommandLine the line of command:'s value
	// (Line when it has none).
	Line, NameLine, CommandLine int
	Name                        string
	Description                 string
	ReadOnly                    bool
	Command                     []string
	// Parameters is the JSON schema of the arguments; nil when absent.
	Parameters map[string]any
	// Timeout is 0 when not given.
	Timeout time.Duration
	// MaxResult is 0 when not given.
	MaxResult int
	Env       []string
}

var (
	agentNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	yamlLineRE  = regexp.MustCompile(`line (\d+)`)
)

// walker is one walk of one file.
type walker struct {
	o      Options
	f      *File
	byName map[string]*Agent // accepted agents
}

func (w *walker) strict() bool { return w.o.Mode == Strict }

func (w *walker) report(sev Severity, line int, key, code, format string, args ...any) {
	if w.o.Mode != Strict || w.o.Report == nil {
		return
	}
	w.o.Report(Problem{Severity: sev, Line: line, Key: key, Code: code, Message: fmt.Sprintf(format, args...)})
}

func (w *walker) errorf(line int, key, code, format string, args ...any) {
	w.report(Error, line, key, code, format, args...)
}

func (w *walker) warnf(line int, key, code, format string, args ...any) {
	w.report(Warning, line, key, code, format, args...)
}

// Walk reads agents.yaml's text. Its error is non-nil only when the file as
// a whole cannot be read: the YAML does not parse (the parser's error,
// prefixed with the file name), or the file is empty or not a mapping
// (ErrNotMapping); a Strict walk has then reported it too, and the File is
// nil.
func Walk(raw []byte, o Options) (*File, error) {
	w := &walker{o: o, f: &File{}, byName: map[string]*Agent{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		line := 0
		var te *yaml.TypeError
		msg := err.Error()
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		w.errorf(line, "", "yaml.syntax", "%s is not valid YAML (%s); fix the syntax", FileName, strings.TrimPrefix(msg, "yaml: "))
		return nil, fmt.Errorf("%s: %w", FileName, err)
	}
	if len(doc.Content) == 0 {
		w.errorf(0, "", "agents.empty", "%s is empty; declare at least one agent under `agents:`", FileName)
		return nil, ErrNotMapping
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		w.errorf(root.Line, "", "yaml.shape", "%s must be a mapping with an `agents:` list", FileName)
		return nil, ErrNotMapping
	}
	f := w.f
	var agentsNode *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "model":
			f.Model, f.ModelSet, f.ModelKeyLine = w.modelName(v, k.Value), true, k.Line
		case "maxForkDepth":
			if n, ok := w.nonNegInt(v, k.Value); ok {
				f.MaxForkDepth, f.MaxForkDepthSet, f.MaxForkDepthKeyLine = n, true, k.Line
			}
		case "maxSteps":
			if n, ok := w.nonNegInt(v, k.Value); ok && n > 0 {
				f.MaxSteps, f.MaxStepsSet = n, true
			} else if v.Value == "0" {
				w.errorf(v.Line, k.Value, "maxSteps.zero", "maxSteps is 0, so no agent could call a model; remove it or give a positive number")
			}
		case "workspace":
			f.Workspace, f.WorkspaceLine = w.str(v, k.Value), v.Line
		case "agents":
			agentsNode = v
		case "tools":
			w.tools(v)
		default:
			w.warnf(k.Line, k.Value, "key.unknown", "unknown key %q is ignored; the keys are model, maxForkDepth, maxSteps, workspace, agents, tools", k.Value)
		}
	}
	if agentsNode == nil || (agentsNode.Kind == yaml.SequenceNode && len(agentsNode.Content) == 0) {
		line := root.Line
		if agentsNode != nil {
			line = agentsNode.Line
		}
		w.errorf(line, "agents", "agents.empty", "no agents are declared; add at least one entry under `agents:`")
		return f, nil
	}
	if agentsNode.Kind != yaml.SequenceNode {
		w.errorf(agentsNode.Line, "agents", "yaml.shape", "`agents:` must be a list of agents")
		return f, nil
	}
	for i, n := range agentsNode.Content {
		w.agent(i, n)
	}
	return f, nil
}

func (w *walker) str(v *yaml.Node, key string) string {
	if v.Kind != yaml.ScalarNode {
		w.errorf(v.Line, key, "yaml.shape", "%s must be a single value", key)
		return ""
	}
	return v.Value
}

// modelName reads a model name: a string, not a number or a boolean that
// YAML would turn into one (model: 42 sends "42" to a provider that has no
// such model).
func (w *walker) modelName(v *yaml.Node, key string) string {
	s := w.str(v, key)
	if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!str" && v.ShortTag() != "!!null" {
		w.errorf(v.Line, key, "model.name", "%s must be a model name such as gpt-4.1-mini, not %s; quote it (%s: \"%s\") if your server really calls a model that", key, v.Value, key, v.Value)
		return ""
	}
	if v.Kind == yaml.ScalarNode && strings.TrimSpace(s) == "" {
		w.errorf(v.Line, key, "model.name", "%s is empty; give a model name such as gpt-4.1-mini, or remove the key for the default", key)
	}
	return s
}

func (w *walker) nonNegInt(v *yaml.Node, key string) (int, bool) {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 0 {
		w.errorf(v.Line, key, "yaml.shape", "%s must be a whole number ≥ 0, not %q", key, v.Value)
		return 0, false
	}
	return n, true
}

func (w *walker) strList(v *yaml.Node, key string) ([]string, []int) {
	if v.Kind != yaml.SequenceNode {
		w.errorf(v.Line, key, "yaml.shape", "%s must be a list, e.g. [a, b]", key)
		return nil, nil
	}
	out := []string{}
	var lines []int
	for i, c := range v.Content {
		if c.Kind != yaml.ScalarNode || c.Value == "" {
			w.errorf(c.Line, fmt.Sprintf("%s[%d]", key, i), "yaml.shape", "each entry of %s must be a name", key)
			continue
		}
		out = append(out, c.Value)
		lines = append(lines, c.Line)
	}
	return out, lines
}

func (w *walker) agent(i int, n *yaml.Node) {
	key := fmt.Sprintf("agents[%d]", i)
	if n.Kind != yaml.MappingNode {
		w.errorf(n.Line, key, "yaml.shape", "each agent must be a mapping with at least `name:`")
		return
	}
	a := &Agent{Key: key, Line: n.Line, NameLine: n.Line}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		kk := key + "." + k.Value
		switch k.Value {
		case "name":
			a.Name, a.NameLine = w.str(v, kk), k.Line
			if a.Name != "" && !agentNameRE.MatchString(a.Name) {
				w.errorf(v.Line, kk, "agent.name", "agent name %q must start with a letter and hold only letters, digits, - and _ (it becomes transfer_to_%s)", a.Name, a.Name)
			}
		case "description":
			a.Description, a.DescriptionKeyLine = w.str(v, kk), k.Line
		case "model":
			a.Model, a.ModelKeyLine = w.modelName(v, kk), k.Line
		case "prompt":
			a.Prompt = w.str(v, kk)
			a.PromptGiven, a.PromptLine, a.PromptKeyLine = true, v.Line, k.Line
		case "tools":
			a.Tools, a.ToolLines = w.strList(v, kk)
			a.ToolsKeyLine = k.Line
		case "handoffs":
			a.Handoffs, a.HandoffLines = w.strList(v, kk)
			a.HandoffsKeyLine = k.Line
		case "fork":
			a.ForkKeyLine = k.Line
			a.Fork = w.fork(v, kk)
		default:
			w.warnf(k.Line, kk, "key.unknown", "unknown agent key %q is ignored; the keys are name, description, model, prompt, tools, handoffs, fork", k.Value)
		}
	}
	if a.Name == "" {
		w.errorf(n.Line, key+".name", "agent.name", "this agent has no name; add `name:`")
		return
	}
	if prev, dup := w.byName[a.Name]; dup {
		w.errorf(n.Line, key+".name", "agent.duplicate", "agent %q is declared twice (first at line %d); rename or remove one", a.Name, prev.Line)
		if w.strict() {
			return
		}
	} else {
		w.byName[a.Name] = a
	}
	w.f.Agents = append(w.f.Agents, a)
}

func (w *walker) fork(v *yaml.Node, key string) *Fork {
	switch v.Kind {
	case yaml.ScalarNode:
		switch v.Value {
		case "true":
			return &Fork{}
		case "false", "":
			return nil
		}
		w.errorf(v.Line, key, "yaml.shape", "fork must be true, false or a mapping {agents: [...], maxBranches: n}, not %q", v.Value)
		return nil
	case yaml.MappingNode:
	default:
		w.errorf(v.Line, key, "yaml.shape", "fork must be true, false or a mapping {agents: [...], maxBranches: n}")
		return nil
	}
	f := &Fork{}
	for j := 0; j+1 < len(v.Content); j += 2 {
		k, c := v.Content[j], v.Content[j+1]
		kk := key + "." + k.Value
		switch k.Value {
		case "agents":
			names, lines := w.strList(c, kk)
			if c.Kind == yaml.SequenceNode && len(c.Content) == 0 {
				// Reported, and the rest of the mapping still checked (a
				// Strict walk lists every error); the project does not load.
				w.errorf(c.Line, kk, "fork.agents.empty", "`agents: []` lets no branch run; list the agents a branch may run, or write `fork: true` for any")
				continue
			}
			f.Agents, f.AgentLines = names, lines
		case "maxBranches":
			n, err := strconv.Atoi(c.Value)
			switch {
			case c.Kind != yaml.ScalarNode || err != nil || n < 0:
				w.errorf(c.Line, kk, "yaml.shape", "maxBranches must be a whole number ≥ 1, not %q", c.Value)
			case n == 0:
				w.errorf(c.Line, kk, "fork.maxBranches.zero", "`maxBranches: 0` allows no branch; give at least 1, or remove `fork:` to take the tool away")
			default:
				f.MaxBranches = n
			}
		default:
			w.warnf(k.Line, kk, "key.unknown", "unknown fork key %q is ignored; the keys are agents and maxBranches", k.Value)
		}
	}
	return f
}

func (w *walker) tools(v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		w.errorf(v.Line, "tools", "yaml.shape", "`tools:` must be a list of command tools")
		return
	}
	for i, n := range v.Content {
		key := fmt.Sprintf("tools[%d]", i)
		if n.Kind != yaml.MappingNode {
			w.errorf(n.Line, key, "yaml.shape", "each tool must be a mapping with name, description, command and parameters")
			continue
		}
		if t := w.tool(key, n); t != nil {
			if w.strict() && w.o.Tool != nil {
				w.o.Tool(t)
			}
			w.f.Tools = append(w.f.Tools, t)
		}
	}
}

// tool reads one command tool; nil when the walk drops it.
func (w *walker) tool(key string, n *yaml.Node) *Tool {
	t := &Tool{Key: key, Line: n.Line, NameLine: n.Line, CommandLine: n.Line}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, c := n.Content[j], n.Content[j+1]
		kk := key + "." + k.Value
		switch k.Value {
		case "name":
			t.Name, t.NameLine = w.str(c, kk), k.Line
		case "description":
			t.Description = w.str(c, kk)
		case "readOnly":
			var b bool
			if err := c.Decode(&b); err != nil {
				w.errorf(c.Line, kk, "yaml.shape", "readOnly must be true or false")
			}
			t.ReadOnly = b
		case "command":
			t.CommandLine = c.Line
			switch c.Kind {
			case yaml.ScalarNode:
				t.Command = strings.Fields(c.Value)
			default:
				t.Command, _ = w.strList(c, kk)
			}
		case "parameters":
			var m map[string]any
			if err := c.Decode(&m); err != nil || m == nil {
				w.errorf(c.Line, kk, "yaml.shape", "parameters must be a JSON schema object, e.g. {type: object, properties: {...}}")
			}
			t.Parameters = m
		case "timeout":
			d, err := time.ParseDuration(c.Value)
			if err != nil || d <= 0 {
				w.errorf(c.Line, kk, "yaml.shape", "timeout must be a duration such as 30s, not %q", c.Value)
			} else {
				t.Timeout = d
			}
		case "maxResult":
			n, err := ParseSize(c.Value)
			if err != nil || c.Kind != yaml.ScalarNode {
				w.errorf(c.Line, kk, "yaml.shape", "maxResult must be a size in bytes such as 65536, 64KiB or 1MiB, not %q", c.Value)
			} else {
				t.MaxResult = n
			}
		case "env":
			t.Env, _ = w.strList(c, kk)
		default:
			w.warnf(k.Line, kk, "key.unknown", "unknown tool key %q is ignored; the keys are name, description, readOnly, command, parameters, timeout, maxResult, env", k.Value)
		}
	}
	refused := true
	switch {
	case t.Name == "":
		w.errorf(n.Line, key+".name", "tool.name", "this tool has no name; add `name:`")
		return nil // unnamed: dropped in both modes
	case IsBuiltinTool(t.Name):
		w.errorf(n.Line, key+".name", "tool.duplicate", "%q is a built-in tool; give the command tool another name", t.Name)
	case strings.HasPrefix(t.Name, "transfer_to_") || t.Name == "fork":
		w.errorf(n.Line, key+".name", "tool.name", "%q is reserved for hand-offs and forks; give the tool another name", t.Name)
	case w.tool1(t.Name) != nil:
		w.errorf(n.Line, key+".name", "tool.duplicate", "tool %q is declared twice; rename or remove one", t.Name)
	case len(t.Command) == 0:
		w.errorf(n.Line, key+".command", "tool.command", "tool %q has no command; add `command: [./tools/x.sh]`", t.Name)
	default:
		refused = false
	}
	if refused && w.strict() {
		return nil
	}
	return t
}

// tool1 returns the tool called name kept so far, or nil.
func (w *walker) tool1(name string) *Tool {
	for _, t := range w.f.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// maxToolResult is the largest maxResult a tool may set: a result is held
// in memory, stored and sent to the model.
const maxToolResult = 64 << 20

// ParseSize reads a byte count: 65536, 64KiB, 64KB, 1MiB, 1MB (KB and MB
// are taken as KiB and MiB), between 1 byte and 64 MiB.
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 || n > maxToolResult/mult {
		return 0, fmt.Errorf("not a size between 1 byte and 64MiB: %q", s)
	}
	return n * mult, nil
}
