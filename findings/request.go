package findings

import (
	"encoding/json"

	"github.com/inspect-dev/inspect/chat"
)

// readRequest reads the recorded request of llm node seq through chat: the
// cause checks look at its tools, its fork tool's agent enum and its
// system text.
func (p *Pass) readRequest(seq int64) (*chat.Request, error) {
	body, err := p.Request(seq)
	if err != nil {
		return nil, err
	}
	return chat.ReadRequest(body, "")
}

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
