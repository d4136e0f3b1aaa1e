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
	"strings"

	"github.com/inspect-dev/inspect/internal/agentsyaml"
	"github.com/inspect-dev/inspect/internal/regfile"
	"github.com/inspect-dev/inspect/snapshot"
)

// File names inside a project folder (package snapshot, which reads them
// back from a run's stored copy, holds the names).
const (
	AgentsFile           = snapshot.AgentsFile
	HouseRulesFile       = snapshot.HouseRulesFile
	ForkInstructionsFile = snapshot.ForkInstructionsFile
)

var forkTopicRE = regexp.MustCompile(`^fork-.+-instructions\.md$`)

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
	raw, err := regfile.ReadFile(filepath.Join(dir, AgentsFile)) // a FIFO is refused, not waited on
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

// parse walks agents.yaml strictly (package agentsyaml, which snapshot
// uses leniently on a run's copy): every problem of the file itself
// becomes a diagnostic, in the walk's order.
func (l *loader) parse(raw []byte) {
	report := func(pr agentsyaml.Problem) {
		sev := SeverityError
		if pr.Severity == agentsyaml.Warning {
			sev = SeverityWarning
		}
		l.diags = append(l.diags, Diagnostic{Severity: sev, Code: pr.Code, File: AgentsFile, Line: pr.Line, Key: pr.Key, Message: pr.Message})
	}
	f, err := agentsyaml.Walk(raw, agentsyaml.Options{Mode: agentsyaml.Strict, Report: report, Tool: l.addTool})
	if err != nil {
		return
	}
	if f.ModelSet {
		l.p.Model = f.Model
	}
	if f.MaxForkDepthSet {
		l.p.MaxForkDepth = f.MaxForkDepth
	}
	if f.MaxStepsSet {
		l.p.MaxSteps = f.MaxSteps
	}
	ws := f.Workspace
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
	l.wsLine = f.WorkspaceLine
	for _, e := range f.Agents {
		a := &Agent{Name: e.Name, Description: strings.TrimSpace(e.Description), Model: e.Model, PromptPath: e.Prompt,
			Tools: e.Tools, Handoffs: e.Handoffs, Line: e.Line}
		r := &agentRefs{a: a, key: e.Key, tools: e.ToolLines, handoffs: e.HandoffLines,
			promptLine: e.PromptLine, promptGiven: e.PromptGiven}
		if e.Fork != nil {
			a.Fork = &Fork{Agents: e.Fork.Agents, MaxBranches: e.Fork.MaxBranches}
			r.forkLine, r.forkAgentKey, r.forkAgents = e.ForkKeyLine, e.Key+".fork", e.Fork.AgentLines
		}
		if a.PromptPath == "" {
			a.PromptPath = snapshot.PromptPath(a.Name)
		}
		l.p.byName[a.Name] = a
		l.p.Agents = append(l.p.Agents, a)
		l.refs = append(l.refs, r)
	}
}

// agentRefs remembers where each name was written, for the cross checks.
type agentRefs struct {
	a            *Agent
	key          string
	tools        []int
	handoffs     []int
	forkLine     int
	forkAgents   []int
	promptLine   int
	promptGiven  bool
	forkAgentKey string
}

// addTool takes a command tool the walk accepted: its program is checked
// (in the walk's order, so its diagnostics fall where they did) and its
// defaults filled in.
func (l *loader) addTool(e *agentsyaml.Tool) {
	t := &CommandTool{Name: e.Name, Description: e.Description, ReadOnly: e.ReadOnly, Command: e.Command,
		Parameters: e.Parameters, Timeout: e.Timeout, MaxResult: e.MaxResult, Env: e.Env, Line: e.Line}
	if t.Timeout == 0 {
		t.Timeout = DefaultToolTimeout
	}
	l.checkProgram(t, e.CommandLine, e.Key+".command")
	if t.Parameters == nil {
		t.Parameters = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	l.p.Tools = append(l.p.Tools, t)
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
	b, err := regfile.ReadFile(filepath.Join(l.dir, filepath.FromSlash(rel)))
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
