package snapshot

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/record"
)

const agentsYAML = `model: gpt-4.1-mini
maxForkDepth: 3
agents:
  - name: analyst
    description: Answers revenue questions.
    model: gpt-4.1
    tools: [read_file, list_dir]
    handoffs: [billing]
    fork: {agents: [researcher], maxBranches: 6}
  - name: researcher
    prompt: ./prompts/../prompts/researcher.md
    fork: true
  - name: billing
    fork: false
  - description: an entry without a name is skipped
tools:
  - name: search_docs
    readOnly: true
    command: [./tools/search.sh]
  - name: send_mail
`

func snap(files ...string) record.Project {
	p := record.Project{Name: "proj"}
	for i := 0; i+1 < len(files); i += 2 {
		p.Files = append(p.Files, record.File{Path: files[i], Content: files[i+1]})
	}
	return p
}

func TestRead(t *testing.T) {
	p := Read(snap(AgentsFile, agentsYAML, "agents/analyst.md", "# Analyst\n\nRead the index first.\n"))
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	if p.Model != "gpt-4.1-mini" || p.ModelLine != 1 || p.MaxForkDepth != 3 || p.MaxForkDepthLine != 2 {
		t.Errorf("model %q line %d, maxForkDepth %d line %d; want gpt-4.1-mini 1, 3 2", p.Model, p.ModelLine, p.MaxForkDepth, p.MaxForkDepthLine)
	}
	want := []*Agent{
		{Name: "analyst", Line: 4, Description: "Answers revenue questions.", Model: "gpt-4.1", Prompt: "agents/analyst.md",
			Tools: []string{"read_file", "list_dir"}, Handoffs: []string{"billing"}, Fork: &Fork{Agents: []string{"researcher"}, MaxBranches: 6},
			DescriptionLine: 5, ModelLine: 6, ToolsLine: 7, HandoffsLine: 8, ForkLine: 9},
		{Name: "researcher", Line: 10, Prompt: "prompts/researcher.md", Fork: &Fork{}, PromptLine: 11, ForkLine: 12},
		{Name: "billing", Line: 13, Prompt: "agents/billing.md", ForkLine: 14},
	}
	if !reflect.DeepEqual(p.Agents, want) {
		for i := range max(len(p.Agents), len(want)) {
			if i >= len(p.Agents) || i >= len(want) || !reflect.DeepEqual(p.Agents[i], want[i]) {
				t.Errorf("agent %d:\n got %+v\nwant %+v", i, at(p.Agents, i), at(want, i))
			}
		}
	}
	if got := p.AgentNames(); !reflect.DeepEqual(got, []string{"analyst", "researcher", "billing"}) {
		t.Errorf("AgentNames() = %q", got)
	}
	wantTools := []*Tool{{Name: "search_docs", ReadOnly: true, Line: 17}, {Name: "send_mail", Line: 20}}
	if !reflect.DeepEqual(p.Tools, wantTools) {
		t.Errorf("Tools = %+v, want %+v", p.Tools, wantTools)
	}
	if p.Agent("billing").Fork != nil || !p.Agent("analyst").Fork.Allows("researcher") || p.Agent("analyst").Fork.Allows("billing") || !p.Agent("researcher").Fork.Allows("anyone") {
		t.Error("Fork.Allows: want researcher only for analyst, anyone for researcher (fork: true), none for billing (fork: false)")
	}
	if got := p.PromptPath("nobody"); got != "agents/nobody.md" {
		t.Errorf("PromptPath(undeclared) = %q, want the default", got)
	}
	if got := p.Lines("agents/analyst.md"); !reflect.DeepEqual(got, []string{"# Analyst", "", "Read the index first."}) {
		t.Errorf("Lines() = %q", got)
	}
	if p.Lines("agents/billing.md") != nil {
		t.Error("Lines(missing file) != nil")
	}
}

func at(as []*Agent, i int) *Agent {
	if i < len(as) {
		return as[i]
	}
	return nil
}

// A snapshot that cannot be read keeps what it can and says why.
func TestRead_Lenient(t *testing.T) {
	tests := []struct {
		name, yaml string
		noFile     bool
		err        string
		agents     []string
	}{
		{name: "no agents.yaml", noFile: true, err: ErrNoAgentsFile.Error()},
		{name: "not yaml", yaml: "agents: [\n", err: "agents.yaml: yaml:"},
		{name: "a list", yaml: "- a\n- b\n", err: "agents.yaml is not a mapping"},
		{name: "wrong types", yaml: "maxForkDepth: lots\nagents:\n  - name: a\n    tools: read_file\n    fork: {agents: 7}\n  - 42\n  - name: b\n", agents: []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snap(AgentsFile, tt.yaml)
			if tt.noFile {
				s = snap()
			}
			p := Read(s)
			if tt.err == "" && p.Err != nil || tt.err != "" && (p.Err == nil || !strings.Contains(p.Err.Error(), tt.err)) {
				t.Errorf("Err = %v, want %q", p.Err, tt.err)
			}
			if got := p.AgentNames(); !reflect.DeepEqual(got, append([]string{}, tt.agents...)) {
				t.Errorf("AgentNames() = %q, want %q", got, tt.agents)
			}
			if p.MaxForkDepth != DefaultMaxForkDepth {
				t.Errorf("MaxForkDepth = %d, want the default", p.MaxForkDepth)
			}
		})
	}
	if !errors.Is(Read(snap()).Err, ErrNoAgentsFile) {
		t.Error("Err is not ErrNoAgentsFile for a snapshot without agents.yaml")
	}
}
