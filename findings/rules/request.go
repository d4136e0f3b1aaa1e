package rules

import (
	"encoding/json"

	"github.com/inspect-dev/inspect/chat"
)

// forkAgents is the enum of the fork tool's branch agent field
// (properties.branches.items.properties.agent.enum, as the runtime writes
// it); nil when fork is absent or its agent field has no enum.
func forkAgents(req *chat.Request) []string {
	t := req.Tool("fork")
	if t == nil {
		return nil
	}
	var p struct {
		Properties struct {
			Branches struct {
				Items struct {
					Properties struct {
						Agent struct {
							Enum []string `json:"enum"`
						} `json:"agent"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"branches"`
		} `json:"properties"`
	}
	if json.Unmarshal(t.Parameters, &p) != nil {
		return nil
	}
	return p.Properties.Branches.Items.Properties.Agent.Enum
}
