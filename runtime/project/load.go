package project

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inspect-dev/inspect/snapshot"
)

// File names inside a project folder (package snapshot, which reads them
// back from a run's stored copy, holds the names).
const (
	AgentsFile           = snapshot.AgentsFile
	HouseRulesFile       = snapshot.HouseRulesFile
	ForkInstructionsFile = snapshot.ForkInstructionsFile
)

var (
	agentNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	forkTopicRE = regexp.MustCompile(`^fork-.+-instructions\.md$`)
)

// loader collects diagnostics while it reads one project.
type loader struct {
	dir   string
	p     *Project
	diags []Diagnostic
	files map[string]string // snapshot: slash path -> content
	refs  []*agentRefs
	// wsLine is the line of `workspace:`, 0 when the default is used.
	wsLine int
}

func (l *loader) errorf(line int, key, code, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{Severity: SeverityError, Code: code, File: AgentsFile, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

func (l *loader) warnf(line int, key, code, format string, args ...any) {
	l.diags = append(l.diags, Diagnostic{Severity: SeverityWarning, Code: code, File: AgentsFile, Line: line, Key: key, Message: fmt.Sprintf(format, args...)})
}

// Load reads the project in dir. It returns a *LoadError listing every error
// (and warning) when the project cannot run; otherwise the project, whose
// Warnings say what is worth fixing.
func Load(dir string) (*Project, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("project %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		hint := "point at the folder that holds agents.yaml"
		if filepath.Base(dir) == AgentsFile {
			hint = fmt.Sprintf("point at its folder: %s", filepath.Dir(dir))
		}
		return nil, &LoadError{Dir: dir, Diagnostics: []Diagnostic{{Code: "project.missing", File: AgentsFile,
			Message: fmt.Sprintf("%s is a file, not a project folder; %s", dir, hint)}}}
	} else if errors.Is(err, fs.ErrNotExist) {
		return nil, &LoadError{Dir: dir, Diagnostics: []Diagnostic{{Code: "project.missing", File: AgentsFile,
			Message: fmt.Sprintf("there is no folder %s; check the path, or create a project there with `inspect init %s`", dir, dir)}}}
	}
	raw, err := os.ReadFile(filepath.Join(dir, AgentsFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &LoadError{Dir: dir, Diagnostics: []Diagnostic{{Code: "project.missing", File: AgentsFile,
				Message: fmt.Sprintf("no %s in %s; point at a project folder, or create one with `inspect init DIR`", AgentsFile, dir)}}}
		}
		return nil, fmt.Errorf("project %s: %w", dir, err)
	}
	l := &loader{dir: dir, files: map[string]string{AgentsFile: string(raw)}}
	l.p = &Project{Dir: dir, Name: filepath.Base(abs), Model: DefaultModel, MaxForkDepth: DefaultMaxForkDepth,
		MaxSteps: DefaultMaxSteps, byName: map[string]*Agent{}}
	l.parse(raw)
	l.readPrompts()
	l.check()

	var errs, warns []Diagnostic
	for _, d := range l.diags {
		if d.Severity == SeverityError {
			errs = append(errs, d)
		} else {
			warns = append(warns, d)
		}
	}
	sortDiags(errs)
	sortDiags(warns)
	if len(errs) > 0 {
		return nil, &LoadError{Dir: dir, Diagnostics: append(errs, warns...)}
	}
	l.p.Warnings = warns
	paths := make([]string, 0, len(l.files))
	for p := range l.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		sum := sha256.Sum256([]byte(l.files[p]))
		l.p.Files = append(l.p.Files, storeFile(p, hex.EncodeToString(sum[:]), l.files[p]))
	}
	return l.p, nil
}

func sortDiags(ds []Diagnostic) {
	sort.SliceStable(ds, func(i, j int) bool {
		if ds[i].File != ds[j].File {
			return ds[i].File == AgentsFile // agents.yaml first
		}
		return ds[i].Line < ds[j].Line
	})
}

// parse reads agents.yaml through yaml.Node so every diagnostic has a line.
func (l *loader) parse(raw []byte) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		line := 0
		var te *yaml.TypeError
		msg := err.Error()
		if errors.As(err, &te) && len(te.Errors) > 0 {
			msg = te.Errors[0]
		}
		if m := regexp.MustCompile(`line (\d+)`).FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		l.errorf(line, "", "yaml.syntax", "%s is not valid YAML (%s); fix the syntax", AgentsFile, strings.TrimPrefix(msg, "yaml: "))
		return
	}
	if len(doc.Content) == 0 {
		l.errorf(0, "", "agents.empty", "%s is empty; declare at least one agent under `agents:`", AgentsFile)
		return
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		l.errorf(root.Line, "", "yaml.shape", "%s must be a mapping with an `agents:` list", AgentsFile)
		return
	}
	var agentsNode *yaml.Node
	wsLine := 0
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "model":
			l.p.Model = l.modelName(v, k.Value)
		case "maxForkDepth":
			l.p.MaxForkDepth = l.nonNegInt(v, k.Value)
		case "maxSteps":
			if n := l.nonNegInt(v, k.Value); n > 0 {
				l.p.MaxSteps = n
			} else if v.Value == "0" {
				l.errorf(v.Line, k.Value, "maxSteps.zero", "maxSteps is 0, so no agent could call a model; remove it or give a positive number")
			}
		case "workspace":
			l.p.Workspace = l.str(v, k.Value)
			wsLine = v.Line
		case "agents":
			agentsNode = v
		case "tools":
			l.parseTools(v)
		default:
			l.warnf(k.Line, k.Value, "key.unknown", "unknown key %q is ignored; the keys are model, maxForkDepth, maxSteps, workspace, agents, tools", k.Value)
		}
	}
	ws := l.p.Workspace
	if ws == "" {
		ws = "workspace"
	}
	if !filepath.IsAbs(ws) {
		ws = filepath.Join(l.dir, ws)
	}
	if abs, err := filepath.Abs(ws); err == nil {
		ws = abs
	}
	l.p.Workspace = ws
	l.wsLine = wsLine
	if agentsNode == nil || (agentsNode.Kind == yaml.SequenceNode && len(agentsNode.Content) == 0) {
		line := root.Line
		if agentsNode != nil {
			line = agentsNode.Line
		}
		l.errorf(line, "agents", "agents.empty", "no agents are declared; add at least one entry under `agents:`")
		return
	}
	if agentsNode.Kind != yaml.SequenceNode {
		l.errorf(agentsNode.Line, "agents", "yaml.shape", "`agents:` must be a list of agents")
		return
	}
	for i, n := range agentsNode.Content {
		l.parseAgent(i, n)
	}
}

func (l *loader) str(v *yaml.Node, key string) string {
	if v.Kind != yaml.ScalarNode {
		l.errorf(v.Line, key, "yaml.shape", "%s must be a single value", key)
		return ""
	}
	return v.Value
}

// modelName reads a model name: a string, not a number or a boolean that
// YAML would turn into one (model: 42 sends "42" to a provider that has no
// such model).
func (l *loader) modelName(v *yaml.Node, key string) string {
	s := l.str(v, key)
	if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!str" && v.ShortTag() != "!!null" {
		l.errorf(v.Line, key, "model.name", "%s must be a model name such as gpt-4.1-mini, not %s; quote it (%s: \"%s\") if your server really calls a model that", key, v.Value, key, v.Value)
		return ""
	}
	if v.Kind == yaml.ScalarNode && strings.TrimSpace(s) == "" {
		l.errorf(v.Line, key, "model.name", "%s is empty; give a model name such as gpt-4.1-mini, or remove the key for the default", key)
	}
	return s
}

func (l *loader) nonNegInt(v *yaml.Node, key string) int {
	n, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || n < 0 {
		l.errorf(v.Line, key, "yaml.shape", "%s must be a whole number ≥ 0, not %q", key, v.Value)
		return 0
	}
	return n
}

func (l *loader) strList(v *yaml.Node, key string) ([]string, []int) {
	if v.Kind != yaml.SequenceNode {
		l.errorf(v.Line, key, "yaml.shape", "%s must be a list, e.g. [a, b]", key)
		return nil, nil
	}
	out := []string{}
	var lines []int
	for i, c := range v.Content {
		if c.Kind != yaml.ScalarNode || c.Value == "" {
			l.errorf(c.Line, fmt.Sprintf("%s[%d]", key, i), "yaml.shape", "each entry of %s must be a name", key)
			continue
		}
		out = append(out, c.Value)
		lines = append(lines, c.Line)
	}
	return out, lines
}

// agentRefs remembers where each name was written, for the cross checks.
type agentRefs struct {
	a            *Agent
	key          string
	tools        []int
	handoffs     []int
	forkLine     int
	forkAgents   []int
	descLine     int
	promptLine   int
	promptGiven  bool
	hasFork      bool
	forkAgentKey string
}

func (l *loader) parseAgent(i int, n *yaml.Node) {
	key := fmt.Sprintf("agents[%d]", i)
	if n.Kind != yaml.MappingNode {
		l.errorf(n.Line, key, "yaml.shape", "each agent must be a mapping with at least `name:`")
		return
	}
	a := &Agent{Line: n.Line}
	r := &agentRefs{a: a, key: key}
	for j := 0; j+1 < len(n.Content); j += 2 {
		k, v := n.Content[j], n.Content[j+1]
		kk := key + "." + k.Value
		switch k.Value {
		case "name":
			a.Name = l.str(v, kk)
			if a.Name != "" && !agentNameRE.MatchString(a.Name) {
				l.errorf(v.Line, kk, "agent.name", "agent name %q must start with a letter and hold only letters, digits, - and _ (it becomes transfer_to_%s)", a.Name, a.Name)
			}
		case "description":
			a.Description = strings.TrimSpace(l.str(v, kk))
			r.descLine = v.Line
		case "model":
			a.Model = l.modelName(v, kk)
		case "prompt":
			a.PromptPath = l.str(v, kk)
			r.promptLine, r.promptGiven = v.Line, true
		case "tools":
			a.Tools, r.tools = l.strList(v, kk)
		case "handoffs":
			a.Handoffs, r.handoffs = l.strList(v, kk)
		case "fork":
			r.forkLine, r.forkAgentKey = k.Line, kk
			a.Fork = l.parseFork(v, kk, r)
		default:
			l.warnf(k.Line, kk, "key.unknown", "unknown agent key %q is ignored; the keys are name, description, model, prompt, tools, handoffs, fork", k.Value)
		}
	}
	if a.Name == "" {
		l.errorf(n.Line, key+".name", "agent.name", "this agent has no name; add `name:`")
		return
	}
	if prev, dup := l.p.byName[a.Name]; dup {
		l.errorf(n.Line, key+".name", "agent.duplicate", "agent %q is declared twice (first at line %d); rename or remove one", a.Name, prev.Line)
		return
	}
	if a.PromptPath == "" {
		a.PromptPath = snapshot.PromptPath(a.Name)
	}
	l.p.byName[a.Name] = a
	l.p.Agents = append(l.p.Agents, a)
	l.refs = append(l.refs, r)
}

func (l *loader) parseFork(v *yaml.Node, key string, r *agentRefs) *Fork {
	switch v.Kind {
	case yaml.ScalarNode:
		switch v.Value {
		case "true":
			r.hasFork = true
			return &Fork{}
		case "false", "":
			return nil
		}
		l.errorf(v.Line, key, "yaml.shape", "fork must be true, false or a mapping {agents: [...], maxBranches: n}, not %q", v.Value)
		return nil
	case yaml.MappingNode:
	default:
		l.errorf(v.Line, key, "yaml.shape", "fork must be true, false or a mapping {agents: [...], maxBranches: n}")
		return nil
	}
	f := &Fork{}
	r.hasFork = true
	for j := 0; j+1 < len(v.Content); j += 2 {
		k, c := v.Content[j], v.Content[j+1]
		kk := key + "." + k.Value
		switch k.Value {
		case "agents":
			names, lines := l.strList(c, kk)
			if c.Kind == yaml.SequenceNode && len(c.Content) == 0 {
				// Reported, and the rest of the mapping still checked (Load
				// lists every error); the project does not load.
				l.errorf(c.Line, kk, "fork.agents.empty", "`agents: []` lets no branch run; list the agents a branch may run, or write `fork: true` for any")
				continue
			}
			f.Agents, r.forkAgents = names, lines
		case "maxBranches":
			n, err := strconv.Atoi(c.Value)
			switch {
			case c.Kind != yaml.ScalarNode || err != nil || n < 0:
				l.errorf(c.Line, kk, "yaml.shape", "maxBranches must be a whole number ≥ 1, not %q", c.Value)
			case n == 0:
				l.errorf(c.Line, kk, "fork.maxBranches.zero", "`maxBranches: 0` allows no branch; give at least 1, or remove `fork:` to take the tool away")
			default:
				f.MaxBranches = n
			}
		default:
			l.warnf(k.Line, kk, "key.unknown", "unknown fork key %q is ignored; the keys are agents and maxBranches", k.Value)
		}
	}
	return f
}

func (l *loader) parseTools(v *yaml.Node) {
	if v.Kind != yaml.SequenceNode {
		l.errorf(v.Line, "tools", "yaml.shape", "`tools:` must be a list of command tools")
		return
	}
	for i, n := range v.Content {
		key := fmt.Sprintf("tools[%d]", i)
		if n.Kind != yaml.MappingNode {
			l.errorf(n.Line, key, "yaml.shape", "each tool must be a mapping with name, description, command and parameters")
			continue
		}
		t := &CommandTool{Line: n.Line, Timeout: DefaultToolTimeout}
		cmdLine := n.Line
		for j := 0; j+1 < len(n.Content); j += 2 {
			k, c := n.Content[j], n.Content[j+1]
			kk := key + "." + k.Value
			switch k.Value {
			case "name":
				t.Name = l.str(c, kk)
			case "description":
				t.Description = l.str(c, kk)
			case "readOnly":
				var b bool
				if err := c.Decode(&b); err != nil {
					l.errorf(c.Line, kk, "yaml.shape", "readOnly must be true or false")
				}
				t.ReadOnly = b
			case "command":
				cmdLine = c.Line
				switch c.Kind {
				case yaml.ScalarNode:
					t.Command = strings.Fields(c.Value)
				default:
					t.Command, _ = l.strList(c, kk)
				}
			case "parameters":
				var m map[string]any
				if err := c.Decode(&m); err != nil || m == nil {
					l.errorf(c.Line, kk, "yaml.shape", "parameters must be a JSON schema object, e.g. {type: object, properties: {...}}")
				}
				t.Parameters = m
			case "timeout":
				d, err := time.ParseDuration(c.Value)
				if err != nil || d <= 0 {
					l.errorf(c.Line, kk, "yaml.shape", "timeout must be a duration such as 30s, not %q", c.Value)
				} else {
					t.Timeout = d
				}
			case "maxResult":
				n, err := parseSize(c.Value)
				if err != nil || c.Kind != yaml.ScalarNode {
					l.errorf(c.Line, kk, "yaml.shape", "maxResult must be a size in bytes such as 65536, 64KiB or 1MiB, not %q", c.Value)
				} else {
					t.MaxResult = n
				}
			case "env":
				t.Env, _ = l.strList(c, kk)
			default:
				l.warnf(k.Line, kk, "key.unknown", "unknown tool key %q is ignored; the keys are name, description, readOnly, command, parameters, timeout, maxResult, env", k.Value)
			}
		}
		switch {
		case t.Name == "":
			l.errorf(n.Line, key+".name", "tool.name", "this tool has no name; add `name:`")
			continue
		case isBuiltin(t.Name):
			l.errorf(n.Line, key+".name", "tool.duplicate", "%q is a built-in tool; give the command tool another name", t.Name)
			continue
		case strings.HasPrefix(t.Name, "transfer_to_") || t.Name == "fork":
			l.errorf(n.Line, key+".name", "tool.name", "%q is reserved for hand-offs and forks; give the tool another name", t.Name)
			continue
		case l.p.CommandTool(t.Name) != nil:
			l.errorf(n.Line, key+".name", "tool.duplicate", "tool %q is declared twice; rename or remove one", t.Name)
			continue
		case len(t.Command) == 0:
			l.errorf(n.Line, key+".command", "tool.command", "tool %q has no command; add `command: [./tools/x.sh]`", t.Name)
			continue
		}
		l.checkProgram(t, cmdLine, key+".command")
		if t.Parameters == nil {
			t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		l.p.Tools = append(l.p.Tools, t)
	}
}

// checkProgram checks that a command tool's program can be started: a path
// (./tools/x.sh, relative to the project folder, or absolute) must be an
// executable file; a bare name not found on PATH is a warning, since the
// machine that runs the project may have it.
func (l *loader) checkProgram(t *CommandTool, line int, key string) {
	prog := t.Command[0]
	if !strings.ContainsRune(prog, '/') {
		if _, err := exec.LookPath(prog); err != nil {
			l.warnf(line, key, "tool.command", "tool %q runs %q, which is not on PATH here; every call of it will fail on this machine", t.Name, prog)
		}
		return
	}
	full := prog
	if !filepath.IsAbs(full) {
		full = filepath.Join(l.dir, filepath.FromSlash(prog))
	}
	fi, err := os.Stat(full)
	switch {
	case err != nil:
		l.errorf(line, key, "tool.command", "tool %q runs %s, which does not exist; a command's path is relative to the project folder (%s)", t.Name, prog, full)
	case fi.IsDir():
		l.errorf(line, key, "tool.command", "tool %q runs %s, which is a folder; give the program's path", t.Name, prog)
	case fi.Mode().Perm()&0o111 == 0:
		l.errorf(line, key, "tool.command", "tool %q runs %s, which is not executable; run chmod +x %s", t.Name, prog, full)
	}
}

func isBuiltin(name string) bool {
	for _, b := range BuiltinTools {
		if b == name {
			return true
		}
	}
	return false
}

// readFile reads a project file (slash path) into the snapshot; ok is false
// when it does not exist.
func (l *loader) readFile(rel string) (string, bool, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, filepath.FromSlash(rel)))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return "", false, err
	}
	l.files[rel] = string(b)
	return string(b), true, nil
}

func (l *loader) readPrompts() {
	if s, ok, err := l.readFile(HouseRulesFile); err != nil {
		l.diags = append(l.diags, Diagnostic{Code: "prompt.unreadable", File: HouseRulesFile, Message: err.Error()})
	} else if ok {
		l.p.HouseRules = s
	}
	for _, r := range l.refs {
		a := r.a
		rel := path.Clean(filepath.ToSlash(a.PromptPath))
		if path.IsAbs(rel) || strings.HasPrefix(rel, "../") {
			l.errorf(r.promptLine, r.key+".prompt", "agent.prompt", "prompt %q must be a path inside the project folder", a.PromptPath)
			continue
		}
		a.PromptPath = rel
		s, ok, err := l.readFile(rel)
		switch {
		case err != nil:
			l.errorf(r.promptLine, r.key+".prompt", "agent.prompt", "cannot read role file %s: %v", rel, err)
		case !ok && r.promptGiven:
			l.errorf(r.promptLine, r.key+".prompt", "agent.prompt", "role file %s does not exist; create it or fix `prompt:`", rel)
		case !ok:
			l.errorf(a.Line, r.key+".name", "agent.prompt", "agent %q has no role file %s; create it (it is the agent's system prompt) or set `prompt:`", a.Name, rel)
		default:
			a.Role = s
		}
	}
	if s, ok, err := l.readFile(ForkInstructionsFile); err == nil && ok {
		l.p.ForkInstructions = s
	}
	entries, _ := os.ReadDir(filepath.Join(l.dir, "agents"))
	for _, e := range entries {
		if e.IsDir() || !forkTopicRE.MatchString(e.Name()) {
			continue
		}
		if s, ok, err := l.readFile("agents/" + e.Name()); err == nil && ok {
			l.p.ForkTopics = append(l.p.ForkTopics, s)
		}
	}
}

// check runs the cross-entry checks: names, hand-offs, forks, tools.
func (l *loader) check() {
	p := l.p
	for _, r := range l.refs {
		a := r.a
		if a.Model == "" {
			a.Model = p.Model
		}
		if a.Description == "" {
			l.warnf(a.Line, r.key+".description", "agent.no-description",
				"agent %q has no description; transfer_to_%s and the fork agent list describe it with a generic sentence. Write it as a routing condition (when should another agent hand it the conversation?)", a.Name, a.Name)
		}
		l.checkDuplicates(a.Tools, r.tools, r.key+".tools", "tool.duplicate", func(name string, first int) string {
			return fmt.Sprintf("agent %q lists tool %q twice (first at line %d); the request would offer two functions of that name, which providers refuse: remove one", a.Name, name, first)
		})
		l.checkDuplicates(a.Handoffs, r.handoffs, r.key+".handoffs", "handoff.duplicate", func(name string, first int) string {
			return fmt.Sprintf("agent %q lists hand-off %q twice (first at line %d); the request would offer transfer_to_%s twice, which providers refuse: remove one", a.Name, name, first, name)
		})
		if a.Fork != nil {
			l.checkDuplicates(a.Fork.Agents, r.forkAgents, r.key+".fork.agents", "fork.duplicate", func(name string, first int) string {
				return fmt.Sprintf("agent %q lists %q twice among its fork agents (first at line %d); remove one", a.Name, name, first)
			})
		}
		for i, t := range a.Tools {
			if !isBuiltin(t) && p.CommandTool(t) == nil {
				hint := "the built-ins are " + strings.Join(BuiltinTools, ", ")
				if len(p.Tools) > 0 {
					hint += "; command tools are declared under `tools:`"
				} else {
					hint += "; declare a command tool under `tools:`"
				}
				l.errorf(r.tools[i], fmt.Sprintf("%s.tools[%d]", r.key, i), "tool.unknown", "agent %q uses unknown tool %q; %s", a.Name, t, hint)
			}
		}
		for i, h := range a.Handoffs {
			k := fmt.Sprintf("%s.handoffs[%d]", r.key, i)
			switch {
			case h == a.Name:
				l.errorf(r.handoffs[i], k, "handoff.self", "agent %q hands off to itself; remove it (the agent already holds the conversation)", a.Name)
			case p.byName[h] == nil:
				l.errorf(r.handoffs[i], k, "handoff.unknown", "agent %q hands off to %q, which is not declared; declare it under `agents:` or fix the name (agents: %s)", a.Name, h, strings.Join(p.AgentNames(), ", "))
			}
		}
		if a.Fork != nil {
			for i, f := range a.Fork.Agents {
				if p.byName[f] == nil {
					l.errorf(r.forkAgents[i], fmt.Sprintf("%s.fork.agents[%d]", r.key, i), "fork.unknown", "agent %q may fork to %q, which is not declared; declare it or fix the name (agents: %s)", a.Name, f, strings.Join(p.AgentNames(), ", "))
				}
			}
			if strings.TrimSpace(p.ForkInstructions) == "" {
				l.errorf(r.forkLine, r.forkAgentKey, "fork.uninstructed", "agent %q can fork but %s is missing or empty; write it (inspect init writes one) so the model knows when a fork pays and what a branch must do", a.Name, ForkInstructionsFile)
			}
		}
	}
	l.checkWorkspace()
	l.checkOneWay()
}

// checkDuplicates reports every name of list that repeats an earlier one.
func (l *loader) checkDuplicates(list []string, lines []int, key, code string, msg func(name string, firstLine int) string) {
	first := map[string]int{}
	for i, name := range list {
		if line, dup := first[name]; dup {
			l.errorf(lines[i], fmt.Sprintf("%s[%d]", key, i), code, "%s", msg(name, line))
			continue
		}
		first[name] = lines[i]
	}
}

// checkWorkspace refuses a workspace folder that is not there: a
// `workspace:` that names none, or the default workspace/ when an agent
// uses a built-in tool (every call of it would fail).
func (l *loader) checkWorkspace() {
	fi, err := os.Stat(l.p.Workspace)
	if err == nil && fi.IsDir() {
		return
	}
	what := "does not exist"
	if err == nil {
		what = "is not a folder"
	}
	if l.wsLine > 0 {
		l.errorf(l.wsLine, "workspace", "workspace.missing", "the workspace folder %s %s; create it, or fix `workspace:` (a path relative to the project folder)", l.p.Workspace, what)
		return
	}
	for _, r := range l.refs {
		for i, t := range r.a.Tools {
			if isBuiltin(t) {
				l.errorf(r.tools[i], fmt.Sprintf("%s.tools[%d]", r.key, i), "workspace.missing", "agent %q uses %s, but the workspace folder %s %s; create it (the built-in tools see only it), or set `workspace:`", r.a.Name, t, l.p.Workspace, what)
				return
			}
		}
	}
}

// checkOneWay warns about each hand-off edge that lies on no cycle: once the
// conversation moves along it, nothing ever brings it back.
func (l *loader) checkOneWay() {
	p := l.p
	reach := func(from, to string) bool {
		seen := map[string]bool{from: true}
		stack := []string{from}
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if n == to {
				return true
			}
			a := p.byName[n]
			if a == nil {
				continue
			}
			for _, h := range a.Handoffs {
				if !seen[h] && p.byName[h] != nil {
					seen[h] = true
					stack = append(stack, h)
				}
			}
		}
		return false
	}
	for _, r := range l.refs {
		a := r.a
		for i, h := range a.Handoffs {
			if h == a.Name || p.byName[h] == nil {
				continue
			}
			if !reach(h, a.Name) {
				l.warnf(r.handoffs[i], fmt.Sprintf("%s.handoffs[%d]", r.key, i), "handoff.one-way",
					"%s → %s lies on no cycle: once %s holds the conversation nothing hands it back to %s; add a way home (e.g. handoffs: [%s] on %s) if that is not intended", a.Name, h, h, a.Name, a.Name, h)
			}
		}
	}
}

// maxToolResult is the largest maxResult a tool may set: a result is held
// in memory, stored and sent to the model.
const maxToolResult = 64 << 20

// parseSize reads a byte count: 65536, 64KiB, 64KB, 1MiB, 1MB (KB and MB
// are taken as KiB and MiB), between 1 byte and 64 MiB.
func parseSize(s string) (int, error) {
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
