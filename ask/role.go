package ask

import (
	"fmt"
	"path"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// RolePath returns the project-relative slash path of agent's role file as
// agents.yaml (its text in agentsYAML) declares it: the agent's `prompt:`
// when set, else agents/<name>.md. It fails when agents.yaml does not parse
// or does not declare the agent.
func RolePath(agentsYAML []byte, agent string) (string, error) {
	var doc struct {
		Agents []struct {
			Name   string `yaml:"name"`
			Prompt string `yaml:"prompt"`
		} `yaml:"agents"`
	}
	if err := yaml.Unmarshal(agentsYAML, &doc); err != nil {
		return "", fmt.Errorf("agents.yaml: %w", err)
	}
	var names []string
	for _, a := range doc.Agents {
		if a.Name != agent {
			names = append(names, a.Name)
			continue
		}
		if a.Prompt == "" {
			return "agents/" + agent + ".md", nil
		}
		return path.Clean(strings.TrimPrefix(a.Prompt, "./")), nil
	}
	return "", fmt.Errorf("agents.yaml declares no agent %q (it has %s)", agent, strings.Join(names, ", "))
}
