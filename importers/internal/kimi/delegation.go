package kimi

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// The delegation tools. Kimi CLI before 1.25 called its tool Task.
const (
	ToolAgent      = "Agent"
	ToolAgentSwarm = "AgentSwarm"
	ToolTask       = "Task"
)

// DefaultSubagentType is the type a sub-agent gets when the call names none.
const DefaultSubagentType = "coder"

// Args are the arguments of an Agent, AgentSwarm or Task call that the
// import uses.
type Args struct {
	Description  string
	Prompt       string
	SubagentType string // Task: subagent_name
	Model        string
	Resume       string // Agent: the agent id resumed
	Background   bool   // run_in_background
	Fork         bool   // Kimi Code: the child starts from the caller's history

	PromptTemplate string            // AgentSwarm: prompt_template with {{item}}
	Items          []string          // AgentSwarm: one new sub-agent each
	ResumeIDs      []string          // AgentSwarm: resume_agent_ids keys, in order
	ResumePrompts  map[string]string // AgentSwarm: the prompt for each resumed id

	Complete bool // the JSON parsed whole; false when a live file cut it short
}

// SwarmPlaceholder is replaced by each item in an AgentSwarm prompt template.
const SwarmPlaceholder = "{{item}}"

// ParseArgs reads the arguments leniently: what precedes the point where a
// cut-short JSON text stops is still read.
func ParseArgs(text string) Args {
	a := Args{}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return a
	}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return a
		}
		key, _ := kt.(string)
		switch key {
		case "items":
			items, ok := stringArray(dec)
			a.Items = items
			if !ok {
				return a
			}
		case "resume_agent_ids":
			ids, prompts, ok := stringObject(dec)
			a.ResumeIDs, a.ResumePrompts = ids, prompts
			if !ok {
				return a
			}
		default:
			var v any
			if err := dec.Decode(&v); err != nil {
				// A string cut short still says something: keep its head.
				v = cutString(text[dec.InputOffset():])
				if v == "" {
					return a
				}
				a.set(key, v)
				return a
			}
			a.set(key, v)
		}
	}
	if t, err := dec.Token(); err == nil && t == json.Delim('}') {
		a.Complete = true
	}
	return a
}

func (a *Args) set(key string, v any) {
	switch key {
	case "description":
		a.Description, _ = v.(string)
	case "prompt":
		a.Prompt, _ = v.(string)
	case "subagent_type", "subagent_name":
		a.SubagentType, _ = v.(string)
	case "model":
		a.Model, _ = v.(string)
	case "resume":
		a.Resume, _ = v.(string)
	case "prompt_template":
		a.PromptTemplate, _ = v.(string)
	case "run_in_background":
		a.Background, _ = v.(bool)
	case "fork":
		a.Fork, _ = v.(bool)
	}
}

// cutString reads the head of a JSON string value that the text ends in
// the middle of (`: "abc` gives "abc"), or "" when there is none.
func cutString(rest string) string {
	rest = strings.TrimLeft(rest, " \t\r\n:")
	if !strings.HasPrefix(rest, `"`) {
		return ""
	}
	for cut := 0; cut <= 8 && cut < len(rest); cut++ {
		var s string
		if json.Unmarshal([]byte(rest[:len(rest)-cut]+`"`), &s) == nil {
			return s
		}
	}
	return ""
}

func stringArray(dec *json.Decoder) ([]string, bool) {
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, false
	}
	var out []string
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return out, false
		}
		if s, ok := v.(string); ok {
			out = append(out, strings.TrimSpace(s))
		}
	}
	_, err := dec.Token()
	return out, err == nil
}

func stringObject(dec *json.Decoder) ([]string, map[string]string, bool) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, false
	}
	var keys []string
	vals := map[string]string{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return keys, vals, false
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			return keys, vals, false
		}
		k, _ := kt.(string)
		k = strings.TrimSpace(k)
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		s, _ := v.(string)
		vals[k] = strings.TrimSpace(s)
	}
	_, err := dec.Token()
	return keys, vals, err == nil
}

// SwarmPrompts are the prompts of an AgentSwarm call's sub-agents in launch
// order: the resumed ones first, then one per item.
func (a Args) SwarmPrompts() []string {
	var out []string
	for _, id := range a.ResumeIDs {
		out = append(out, a.ResumePrompts[id])
	}
	for _, it := range a.Items {
		out = append(out, strings.ReplaceAll(a.PromptTemplate, SwarmPlaceholder, it))
	}
	return out
}

// Result is what an Agent call's result text says about its sub-agent.
type Result struct {
	AgentID string // agent_id: …
	TaskID  string // task_id: … (a background agent)
	Type    string // actual_subagent_type: …
	Status  string // status: completed|failed|running
	Summary string // the text after [summary], else after the header
	Error   string // subagent error: …
}

// ParseResult reads the "key: value" header both Kimi CLIs put before an
// Agent result's summary.
func ParseResult(text string) Result {
	var r Result
	rest := text
	for rest != "" {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		if strings.TrimSpace(line) == "[summary]" {
			r.Summary = rest
			return r
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "agent_id":
			r.AgentID = v
		case "task_id":
			r.TaskID = v
		case "actual_subagent_type":
			r.Type = v
		case "status":
			if r.Status == "" {
				r.Status = v
			}
		case "subagent error":
			r.Error = v
		}
	}
	if r.Summary == "" && r.Status != "running" {
		r.Summary = text
	}
	return r
}

// SwarmEntry is one <subagent …> of an AgentSwarm result.
type SwarmEntry struct {
	AgentID string
	Item    string
	Outcome string // completed, failed, aborted
	Body    string
}

var swarmEntry = regexp.MustCompile(`(?s)<subagent((?:\s+[a-z_]+="[^"]*")*)\s*>(.*?)</subagent>`)
var swarmAttr = regexp.MustCompile(`([a-z_]+)="([^"]*)"`)

// ParseSwarmResult reads the <subagent> entries of an AgentSwarm result, in
// launch order.
func ParseSwarmResult(text string) []SwarmEntry {
	var out []SwarmEntry
	for _, m := range swarmEntry.FindAllStringSubmatch(text, -1) {
		e := SwarmEntry{Body: m[2]}
		for _, a := range swarmAttr.FindAllStringSubmatch(m[1], -1) {
			v := xmlUnescape(a[2])
			switch a[1] {
			case "agent_id":
				e.AgentID = v
			case "item":
				e.Item = v
			case "outcome":
				e.Outcome = v
			}
		}
		out = append(out, e)
	}
	return out
}

func xmlUnescape(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// Outcome maps a sub-agent's outcome as the Kimi tools spell it (Kimi CLI
// meta.json and background-task statuses, Kimi Code task statuses, swarm
// outcomes, result headers) to a branch status (DESIGN §13): completed → ok,
// failed → error, a step or time limit → exhausted, cancelled → cancelled,
// anything not finished → interrupted. reason is the failure text, if any,
// in which a step limit or a timeout is recognised.
func Outcome(status, reason string) record.Status {
	switch strings.ToLower(strings.TrimSpace(status)) {
	case "completed", "idle", "ok", "success":
		return record.StatusOK
	case "timed_out", "timeout":
		return record.StatusExhausted
	case "failed", "error":
		if Exhausted(reason) {
			return record.StatusExhausted
		}
		return record.StatusError
	case "killed", "cancelled", "canceled", "aborted":
		return record.StatusCancelled
	}
	return record.StatusInterrupted
}

// Exhausted reports whether a failure text says a step, turn or time limit
// ended the agent (Kimi CLI "Max steps reached", "Agent timed out (…)";
// Kimi Code "Turn exceeded maxSteps=…", loop.max_steps_exceeded).
func Exhausted(reason string) bool {
	r := strings.ToLower(reason)
	for _, s := range []string{"max steps", "max_steps", "maxsteps", "timed out", "turn limit", "max turns"} {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

// Compact returns JSON text without insignificant space, or the text as it
// is when it is not JSON.
func Compact(raw []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// Why is the error text a branch gets when its source gives none.
func Why(status record.Status) string {
	switch status {
	case record.StatusError:
		return "the sub-agent failed"
	case record.StatusExhausted:
		return "the sub-agent hit its step or time limit"
	case record.StatusCancelled:
		return "the sub-agent was stopped before it finished"
	case record.StatusInterrupted:
		return "the sub-agent never finished"
	}
	return ""
}
