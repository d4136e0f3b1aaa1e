package kimicli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
)

// The first pass over the session's journal. Which turns of a sub-agent's
// journal are a call's depends on the calls after it (several calls
// resuming one sub-agent share its journal: each gets the turns up to the
// next one's), and a sub-agent no call names is placed where it started;
// the streaming read hands each fork over when its calls come back, so it
// learns these first, reading only the records that make or answer an
// Agent call (and the background tasks' notices), not the conversation.

// scan is what the first pass found.
type scan struct {
	calls        []*scanCall       // every delegation call, in call order
	wrappedAgent map[string]string // Agent call id -> agent id, from forwarded events
	notices      map[string]notice // background task id -> its completion notice
	claims       map[string][]int  // agent id -> the calls (indexes in calls) that ran it, in order
}

// scanCall is one Agent (or Task) call as the builder will read it.
type scanCall struct {
	id     string
	at     time.Time
	args   strings.Builder
	open   bool // no result yet
	done   bool
	result string
	last   int // the journal line after which nothing changes the call or its branch
}

// lastCall is what the builder's most recent open call is: a delegation
// (its scanCall), another tool (other), or none.
type lastCall struct {
	d     *scanCall
	other bool
}

var markers = [][]byte{[]byte(`"ToolCall`), []byte(`"ToolResult"`), []byte(`"SubagentEvent"`), []byte(`"Notification"`)}

// prescan reads the session's journal at path for its delegation calls.
func prescan(ctx context.Context, path string, opt importers.Options) (*scan, error) {
	sc := &scan{wrappedAgent: map[string]string{}, notices: map[string]notice{}, claims: map[string][]int{}}
	j, err := kimi.NewLog(&importers.Report{}, importers.Options{}, filepath.Dir(path)).Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	open := map[string]*scanCall{}
	byID := map[string]*scanCall{}
	var last lastCall
	for {
		n, raw, _, err := j.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(markers, func(m []byte) bool { return bytes.Contains(raw, m) }) {
			continue
		}
		var l line
		var env envelope
		if json.Unmarshal(raw, &l) != nil || l.Type == "metadata" || len(l.Message) == 0 || json.Unmarshal(l.Message, &env) != nil || env.Type == "" {
			continue
		}
		at := kimi.Seconds(l.Timestamp)
		switch env.Type {
		case "ToolCall":
			var p toolCall
			if json.Unmarshal(env.Payload, &p) != nil {
				continue
			}
			if !isDelegation(p.Function.Name) {
				last = lastCall{other: true}
				continue
			}
			c := &scanCall{id: p.ID, at: at, last: n}
			if p.Function.Arguments != nil {
				c.args.WriteString(*p.Function.Arguments)
			}
			sc.calls = append(sc.calls, c)
			byID[p.ID] = c
			if p.ID != "" {
				c.open = true
				open[p.ID] = c
			}
			last = lastCall{d: c}
		case "ToolCallPart":
			c := last.d
			if c == nil || c.args.Len() > opt.TextCap() {
				continue
			}
			var p struct {
				Part *string `json:"arguments_part"`
			}
			if json.Unmarshal(env.Payload, &p) != nil || p.Part == nil {
				continue
			}
			c.args.WriteString(*p.Part)
			c.last = n
		case "ToolResult":
			named := false
			for id := range open {
				if q, _ := json.Marshal(id); bytes.Contains(env.Payload, q) {
					named = true
					break
				}
			}
			if !named {
				continue
			}
			var p struct {
				ID    string `json:"tool_call_id"`
				Value struct {
					Output  json.RawMessage `json:"output"`
					Message string          `json:"message"`
				} `json:"return_value"`
			}
			if json.Unmarshal(env.Payload, &p) != nil {
				continue
			}
			c := open[p.ID]
			if c == nil {
				continue
			}
			delete(open, p.ID)
			if last.d == c {
				last = lastCall{}
			}
			out := kimi.ContentText(p.Value.Output)
			if out == "" {
				out = p.Value.Message
			}
			c.open, c.done, c.result, c.last = false, true, opt.Clip(out), n
		case "SubagentEvent":
			var p struct {
				CallID     string `json:"parent_tool_call_id"`
				LegacyCall string `json:"task_tool_call_id"`
				AgentID    string `json:"agent_id"`
			}
			if json.Unmarshal(env.Payload, &p) != nil {
				continue
			}
			call := kimi.FirstOf(p.CallID, p.LegacyCall)
			if call == "" {
				continue
			}
			if p.AgentID != "" {
				sc.wrappedAgent[call] = p.AgentID
			}
			if c := byID[call]; c != nil { // the forwarded events build the branch when its journal is missing
				c.last = n
			}
		case "Notification":
			var p notification
			if json.Unmarshal(env.Payload, &p) != nil {
				continue
			}
			if id, n, ok := p.notice(at); ok {
				sc.notices[id] = n
			}
		}
	}
	for i, c := range sc.calls {
		args := ""
		if c.id != "" {
			args = opt.Clip(c.args.String())
		}
		var res kimi.Result
		if c.done {
			res = kimi.ParseResult(c.result)
		}
		if id := agentOf(res, sc.wrappedAgent[c.id], kimi.ParseArgs(args)); id != "" {
			sc.claims[id] = append(sc.claims[id], i)
		}
		c.args, c.result = strings.Builder{}, "" // the calls' ids, times and last lines are what is kept
	}
	return sc, nil
}

// agentOf is the sub-agent a call ran: as its result says, else as the
// events it forwarded say, else the one it resumed; "" when none is safe
// to name a folder by.
func agentOf(res kimi.Result, wrapped string, a kimi.Args) string {
	id := kimi.FirstOf(res.AgentID, wrapped, a.Resume)
	if !kimi.SafeID(id) {
		return ""
	}
	return id
}

// window is the part of its sub-agent's journal call i ran (Claim).
func (sc *scan) window(agentID string, i int) kimi.Window {
	list := sc.claims[agentID]
	k := slices.Index(list, i)
	if len(list) < 2 || k < 0 {
		return kimi.Window{}
	}
	at := make([]time.Time, len(list))
	for j, x := range list {
		at[j] = sc.calls[x].at
	}
	return kimi.Claim(at, k)
}
