package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProject creates a project with the given agents.yaml; every agent
// named in roles gets a role file, and fork-instructions.md is written
// unless noForkInstructions.
func writeProject(t *testing.T, yaml string, roles []string, noForkInstructions bool) string {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.WriteFile(filepath.Join(dir, AgentsFile), []byte(yaml), 0o644)
	for _, r := range roles {
		os.WriteFile(filepath.Join(dir, "agents", r+".md"), []byte("You are "+r+"."), 0o644)
	}
	if !noForkInstructions {
		os.WriteFile(filepath.Join(dir, ForkInstructionsFile), []byte("Fork when it pays."), 0o644)
	}
	return dir
}

func TestLoad_Errors(t *testing.T) {
	tests := []struct {
		name   string
		yaml   string
		noFork bool
		code   string
		line   int
		key    string
	}{
		{"handoff.unknown", "agents:\n  - name: a\n    description: A.\n    handoffs: [zed]\n", false, "handoff.unknown", 4, "agents[0].handoffs[0]"},
		{"handoff.self", "agents:\n  - name: a\n    description: A.\n    handoffs:\n      - a\n", false, "handoff.self", 5, "agents[0].handoffs[0]"},
		{"fork.unknown", "agents:\n  - name: a\n    description: A.\n    fork:\n      agents: [a, ghost]\n", false, "fork.unknown", 5, "agents[0].fork.agents[1]"},
		{"fork agents empty", "agents:\n  - name: a\n    description: A.\n    fork: {agents: []}\n", false, "fork.agents.empty", 4, "agents[0].fork.agents"},
		{"maxBranches zero", "agents:\n  - name: a\n    description: A.\n    fork:\n      maxBranches: 0\n", false, "fork.maxBranches.zero", 5, "agents[0].fork.maxBranches"},
		{"fork.uninstructed", "agents:\n  - name: a\n    description: A.\n    fork: true\n", true, "fork.uninstructed", 4, "agents[0].fork"},
		{"unknown tool", "agents:\n  - name: a\n    description: A.\n    tools: [read_file, grep]\n", false, "tool.unknown", 4, "agents[0].tools[1]"},
		{"duplicate agent", "agents:\n  - name: a\n    description: A.\n  - name: a\n    description: B.\n", false, "agent.duplicate", 4, "agents[1].name"},
		{"missing role file", "agents:\n  - name: a\n    description: A.\n  - name: c\n    description: C.\n", false, "agent.prompt", 4, "agents[1].name"},
		{"no agents", "model: x\n", false, "agents.empty", 1, "agents"},
		{"bad yaml", "agents:\n  - name: a\n\t  tools: []\n", false, "yaml.syntax", 2, ""}, // the line the YAML parser reports
		// issue 12 item 13: each of these was accepted and failed later
		{"duplicate tool", "agents:\n  - name: a\n    description: A.\n    tools: [read_file, read_file]\n", false, "tool.duplicate", 4, "agents[0].tools[1]"},
		{"duplicate handoff", "agents:\n  - name: a\n    description: A.\n    handoffs:\n      - b\n      - b\n  - name: b\n    description: B.\n    handoffs: [a]\n", false, "handoff.duplicate", 6, "agents[0].handoffs[1]"},
		{"duplicate fork agent", "agents:\n  - name: a\n    description: A.\n    fork: {agents: [a, a]}\n", false, "fork.duplicate", 4, "agents[0].fork.agents[1]"},
		{"model a number", "model: 42\nagents:\n  - name: a\n    description: A.\n", false, "model.name", 1, "model"},
		{"agent model a number", "agents:\n  - name: a\n    description: A.\n    model: 4.1\n", false, "model.name", 4, "agents[0].model"},
		{"workspace missing", "workspace: data\nagents:\n  - name: a\n    description: A.\n", false, "workspace.missing", 1, "workspace"},
		{"default workspace missing", "agents:\n  - name: a\n    description: A.\n    tools: [list_dir]\n", false, "workspace.missing", 4, "agents[0].tools[0]"},
		{"command missing", "agents:\n  - name: a\n    description: A.\n    tools: [s]\ntools:\n  - name: s\n    description: S.\n    command: [./tools/none.sh]\n", false, "tool.command", 8, "tools[0].command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeProject(t, tt.yaml, []string{"a", "b"}, tt.noFork)
			_, err := Load(dir)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Load error = %v, want a *LoadError", err)
			}
			var found *Diagnostic
			for i, d := range le.Diagnostics {
				if d.Code == tt.code {
					found = &le.Diagnostics[i]
				}
			}
			if found == nil {
				t.Fatalf("diagnostics %v, want %s", le.Diagnostics, tt.code)
			}
			if found.Severity != SeverityError || found.File != AgentsFile || found.Line != tt.line || found.Key != tt.key {
				t.Errorf("%s at %s:%d key %q (%s), want %s:%d key %q error", found.Code, found.File, found.Line, found.Key, found.Severity, AgentsFile, tt.line, tt.key)
			}
			if !strings.Contains(err.Error(), AgentsFile+":") || !strings.Contains(err.Error(), tt.code) {
				t.Errorf("error text %q does not name the file and code", err)
			}
		})
	}
}

// One fork mapping with several mistakes reports every one of them: a
// `maxBranches: 0` or `agents: []` does not hide an unknown agent or the
// missing fork instructions (Load lists every error).
func TestLoad_ForkReportsEveryError(t *testing.T) {
	yaml := "agents:\n  - name: a\n    description: A.\n    fork: {agents: [a, ghost], maxBranches: 0}\n  - name: b\n    description: B.\n    fork: {agents: [], maxBranches: 0}\n"
	dir := writeProject(t, yaml, []string{"a", "b"}, true)
	_, err := Load(dir)
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("Load error = %v, want a *LoadError", err)
	}
	got := map[string]int{}
	for _, d := range le.Diagnostics {
		got[d.Code+" "+d.Key]++
	}
	for _, want := range []string{
		"fork.maxBranches.zero agents[0].fork.maxBranches", "fork.unknown agents[0].fork.agents[1]", "fork.uninstructed agents[0].fork",
		"fork.agents.empty agents[1].fork.agents", "fork.maxBranches.zero agents[1].fork.maxBranches", "fork.uninstructed agents[1].fork",
	} {
		if got[want] != 1 {
			t.Errorf("diagnostic %q reported %d times, want once; all: %v", want, got[want], le.Diagnostics)
		}
	}
}

// A project path that is missing, or a file (agents.yaml itself), is an
// input error that says what to point at, not a raw "not a directory".
func TestLoad_NotAFolder(t *testing.T) {
	dir := writeProject(t, "agents:\n  - name: a\n    description: A.\n", []string{"a"}, false)
	tests := []struct{ path, want string }{
		{filepath.Join(dir, AgentsFile), "point at its folder: " + dir},
		{filepath.Join(dir, "agents", "a.md"), "is a file, not a project folder"},
		{filepath.Join(dir, "nope"), "there is no folder " + filepath.Join(dir, "nope")},
	}
	for _, tt := range tests {
		_, err := Load(tt.path)
		var le *LoadError
		if !errors.As(err, &le) {
			t.Fatalf("Load(%s) error = %v, want a *LoadError", tt.path, err)
		}
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "project.missing") {
			t.Errorf("Load(%s) = %q, want it to say %q", tt.path, err, tt.want)
		}
	}
}

func TestLoad_Warnings(t *testing.T) {
	yaml := `agents:
  - name: intake
    description: Routes cases.
    handoffs: [billing, support]
  - name: billing
    description: Answers invoices.
    handoffs: [intake]
  - name: support
`
	dir := writeProject(t, yaml, []string{"intake", "billing", "support"}, false)
	p, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var got []string
	for _, d := range p.Warnings {
		got = append(got, d.String())
	}
	want := []string{
		"agents.yaml:4: agents[0].handoffs[1]: warning handoff.one-way: intake → support lies on no cycle",
		"agents.yaml:8: agents[2].description: warning agent.no-description: agent \"support\" has no description",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings = %q, want %d", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q, want prefix %q", i, got[i], want[i])
		}
	}
}

func TestLoad_OK(t *testing.T) {
	yaml := `model: m1
maxForkDepth: 3
agents:
  - name: lead
    description: Leads.
    model: m2
    tools: [read_file, search]
    fork: {agents: [lead], maxBranches: 4}
tools:
  - name: search
    description: Search.
    readOnly: true
    command: [./tools/search.sh]
    timeout: 5s
`
	dir := writeProject(t, yaml, []string{"lead"}, false)
	os.WriteFile(filepath.Join(dir, "agents", "fork-budget-instructions.md"), []byte("Budget rules."), 0o644)
	os.MkdirAll(filepath.Join(dir, "workspace"), 0o755)
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	os.WriteFile(filepath.Join(dir, "tools", "search.sh"), []byte("#!/bin/sh\n"), 0o755)
	p, err := Load(dir)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	a := p.Agent("lead")
	if a.Model != "m2" || p.MaxForkDepth != 3 || a.Fork.MaxBranches != 4 || !a.Fork.Allows("lead") || a.Role != "You are lead." {
		t.Errorf("agent = %+v, fork %+v", a, a.Fork)
	}
	if ct := p.CommandTool("search"); ct == nil || !ct.ReadOnly || ct.Timeout.String() != "5s" {
		t.Errorf("command tool = %+v", ct)
	}
	var paths []string
	for _, f := range p.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, ","); got != "agents.yaml,agents/fork-budget-instructions.md,agents/fork-instructions.md,agents/lead.md" {
		t.Errorf("snapshot = %s", got)
	}
	if len(p.ForkTopics) != 1 || p.Workspace != filepath.Join(p.Dir, "workspace") && !strings.HasSuffix(p.Workspace, "/workspace") {
		t.Errorf("topics %v, workspace %s", p.ForkTopics, p.Workspace)
	}
}
