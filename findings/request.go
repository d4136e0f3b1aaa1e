package findings

import (
	"github.com/inspect-dev/inspect/chat"
)

// ReadRequest reads what llm node seq's recorded request offered through
// chat: the cause checks look at its tools, its fork tool's agent enum and
// its system text. It reads the request's frame when the audit has frames
// (not the conversation the request carried), and each node's once per
// audit: several rules ask of the same calls.
func (p *Pass) ReadRequest(seq int64) (*chat.Request, error) {
	if p.shared == nil {
		p.shared = &audit{}
	}
	if r, ok := p.shared.requests[seq]; ok {
		return r.req, r.err
	}
	var body []byte
	var err error
	if p.frames != nil {
		body, err = p.frames(seq)
	} else {
		body, err = p.Request(seq)
	}
	if p.shared.requests == nil {
		p.shared.requests = map[int64]readRequest{}
		p.shared.frames = map[string]readRequest{}
	}
	var req *chat.Request
	if err == nil {
		// The calls of a conversation share their frame (model, tools,
		// system prompt): each distinct one is parsed once.
		if r, ok := p.shared.frames[string(body)]; ok && p.frames != nil {
			req, err = r.req, r.err
		} else {
			req, err = chat.ReadRequest(body, "")
			if p.frames != nil {
				p.shared.frames[string(body)] = readRequest{req, err}
			}
		}
	}
	p.shared.requests[seq] = readRequest{req, err}
	return req, err
}

// readRequest is one node's request as readRequest read it.
type readRequest struct {
	req *chat.Request
	err error
}
