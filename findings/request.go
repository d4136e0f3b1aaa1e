package findings

import (
	"encoding/json"
	"fmt"
	"strings"
)

// RequestView is what the cause checks read from one recorded request body
// (an OpenAI-compatible chat completion request).
type RequestView struct {
	// Tools are the function names offered, in order.
	Tools []string
	// ForkAgents is the enum of the fork tool's branch agent field; nil when
	// fork is absent or its agent field has no enum.
	ForkAgents []string
	// System is the text of the system message(s).
	System string
}

// HasTool reports whether name was among the offered tools.
func (v *RequestView) HasTool(name string) bool { return contains(v.Tools, name) }

// ParseRequest reads the tools, the fork agent enum and the system prompt
// from a request body.
func ParseRequest(body []byte) (*RequestView, error) {
	var req struct {
		Tools []struct {
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("read recorded request: %w", err)
	}
	v := &RequestView{}
	for _, t := range req.Tools {
		v.Tools = append(v.Tools, t.Function.Name)
		if t.Function.Name == "fork" {
			v.ForkAgents = forkEnum(t.Function.Parameters)
		}
	}
	var sys []string
	for _, m := range req.Messages {
		if m.Role != "system" && m.Role != "developer" {
			continue
		}
		sys = append(sys, contentText(m.Content))
	}
	v.System = strings.Join(sys, "\n")
	return v, nil
}

// forkEnum digs properties.branches.items.properties.agent.enum out of the
// fork tool's parameters.
func forkEnum(params json.RawMessage) []string {
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
	if json.Unmarshal(params, &p) != nil {
		return nil
	}
	return p.Properties.Branches.Items.Properties.Agent.Enum
}

// contentText reads a message content that is a string or an array of
// {type: text, text} parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}
