package agentsyaml

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

const file = `model: gpt-4.1-mini
maxForkDepth: 3
agents:
  - name: analyst
    description: Answers revenue questions.
    tools: [read_file, search]
    fork: {agents: [analyst], maxBranches: 6}
  - name: analyst
    description: declared twice
tools:
  - name: search
    command: [./tools/search.sh]
    timeout: 5s
  - name: mail
    readOnly: true
`

// The two modes read the same values with the same lines; Strict reports
// and drops the entries it refuses, Lenient keeps every named one and
// reports nothing.
func TestWalk_Modes(t *testing.T) {
	var strictProblems, lenientProblems []string
	var hooked []string
	strict, err := Walk([]byte(file), Options{Mode: Strict,
		Report: func(p Problem) {
			strictProblems = append(strictProblems, fmt.Sprintf("%d %s %s", p.Line, p.Key, p.Code))
		},
		Tool: func(t *Tool) { hooked = append(hooked, t.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	lenient, err := Walk([]byte(file), Options{Mode: Lenient,
		Report: func(p Problem) { lenientProblems = append(lenientProblems, p.Code) },
		Tool:   func(t *Tool) { t.Name = "the hook ran in Lenient mode" }})
	if err != nil {
		t.Fatal(err)
	}
	wantProblems := []string{"14 tools[1].command tool.command", "8 agents[1].name agent.duplicate"}
	if !reflect.DeepEqual(strictProblems, wantProblems) {
		t.Errorf("Strict problems = %q, want %q", strictProblems, wantProblems)
	}
	if lenientProblems != nil {
		t.Errorf("Lenient reported %q, want nothing", lenientProblems)
	}
	if !reflect.DeepEqual(hooked, []string{"search"}) {
		t.Errorf("Tool hook saw %q, want the one accepted tool", hooked)
	}
	if len(strict.Agents) != 1 || len(strict.Tools) != 1 {
		t.Errorf("Strict kept %d agents and %d tools, want 1 and 1", len(strict.Agents), len(strict.Tools))
	}
	if len(lenient.Agents) != 2 || len(lenient.Tools) != 2 || lenient.Tools[1].Name != "mail" || !lenient.Tools[1].ReadOnly {
		t.Errorf("Lenient kept %d agents and %d tools (%+v), want 2 and 2", len(lenient.Agents), len(lenient.Tools), lenient.Tools)
	}
	if !reflect.DeepEqual(strict.Agents[0], lenient.Agents[0]) || !reflect.DeepEqual(strict.Tools[0], lenient.Tools[0]) {
		t.Errorf("the modes read the first agent or tool differently:\n%+v\n%+v", strict.Agents[0], lenient.Agents[0])
	}
	a := lenient.Agents[0]
	want := &Agent{Key: "agents[0]", Line: 4, NameLine: 4, Name: "analyst", Description: "Answers revenue questions.",
		Tools: []string{"read_file", "search"}, ToolLines: []int{6, 6},
		Fork:               &Fork{Agents: []string{"analyst"}, AgentLines: []int{7}, MaxBranches: 6},
		DescriptionKeyLine: 5, ToolsKeyLine: 6, ForkKeyLine: 7}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("agent =\n%+v\nwant\n%+v", a, want)
	}
	if !lenient.ModelSet || lenient.Model != "gpt-4.1-mini" || lenient.ModelKeyLine != 1 || !lenient.MaxForkDepthSet || lenient.MaxForkDepth != 3 || lenient.MaxForkDepthKeyLine != 2 {
		t.Errorf("top level = %+v", lenient)
	}
	if st := strict.Tools[0]; st.Timeout.String() != "5s" || st.CommandLine != 12 || st.Line != 11 {
		t.Errorf("tool = %+v, want timeout 5s, command on line 12", st)
	}
}

// A value of the wrong shape is dropped in both modes (and reported in
// Strict); the rest of the file is still read.
func TestWalk_WrongShapes(t *testing.T) {
	const bad = "maxForkDepth: lots\nagents:\n  - name: a\n    tools: read_file\n    fork: {agents: 7}\n  - 42\n  - name: b\n    model: 4.1\n"
	var codes []string
	for _, mode := range []Mode{Strict, Lenient} {
		f, err := Walk([]byte(bad), Options{Mode: mode, Report: func(p Problem) { codes = append(codes, fmt.Sprintf("%d %s", p.Line, p.Code)) }})
		if err != nil {
			t.Fatal(err)
		}
		if f.MaxForkDepthSet || len(f.Agents) != 2 || f.Agents[0].Tools != nil || f.Agents[0].Fork == nil || f.Agents[0].Fork.Agents != nil || f.Agents[1].Model != "" {
			t.Errorf("mode %d: %+v %+v %+v", mode, f, f.Agents[0], f.Agents[1])
		}
	}
	want := []string{"1 yaml.shape", "4 yaml.shape", "5 yaml.shape", "6 yaml.shape", "8 model.name"}
	if !reflect.DeepEqual(codes, want) {
		t.Errorf("problems = %q, want %q (Strict's only)", codes, want)
	}
}

// A file that cannot be read as a whole is Walk's error, in both modes.
func TestWalk_ErrFile(t *testing.T) {
	tests := []struct{ name, yaml, err, code string }{
		{"not yaml", "agents: [\n", "agents.yaml: yaml:", "yaml.syntax"},
		{"empty", "", ErrNotMapping.Error(), "agents.empty"},
		{"a list", "- a\n", ErrNotMapping.Error(), "yaml.shape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []Mode{Strict, Lenient} {
				var codes []string
				f, err := Walk([]byte(tt.yaml), Options{Mode: mode, Report: func(p Problem) { codes = append(codes, p.Code) }})
				if f != nil || err == nil || !strings.HasPrefix(err.Error(), tt.err) {
					t.Errorf("mode %d: Walk = %v, %v; want nil and %q", mode, f, err, tt.err)
				}
				if tt.err == ErrNotMapping.Error() && !errors.Is(err, ErrNotMapping) {
					t.Errorf("mode %d: err %v is not ErrNotMapping", mode, err)
				}
				if mode == Strict && !reflect.DeepEqual(codes, []string{tt.code}) || mode == Lenient && codes != nil {
					t.Errorf("mode %d: problems %q, want [%s] in Strict only", mode, codes, tt.code)
				}
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"65536": 65536, "64KiB": 64 << 10, "2MiB": 2 << 20, "8K": 8 << 10, "1 MB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-5", "lots", "1GiB", "65MiB"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}
