package openaiagents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// maxBody bounds the reconstructed request and the recorded response kept
// for one model span; a larger one is dropped (the span keeps its usage,
// calls and text), so memory stays bounded by the number of spans.
const maxBody = 1 << 20

// item is one line or array element: a trace or a span.
type item struct {
	Object       string          `json:"object"`
	ID           string          `json:"id"`
	TraceID      string          `json:"trace_id"`
	ParentID     *string         `json:"parent_id"`
	StartedAt    *string         `json:"started_at"`
	EndedAt      *string         `json:"ended_at"`
	WorkflowName string          `json:"workflow_name"`
	GroupID      *string         `json:"group_id"`
	SpanData     json.RawMessage `json:"span_data"`
	Error        *spanError      `json:"error"`
}

type spanError struct {
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// spanData holds the fields of every span type this importer reads.
type spanData struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	Output     json.RawMessage `json:"output"`
	Model      string          `json:"model"`
	Usage      json.RawMessage `json:"usage"`
	ResponseID string          `json:"response_id"`
	FromAgent  string          `json:"from_agent"`
	ToAgent    string          `json:"to_agent"`
	Data       json.RawMessage `json:"data"`
	Tools      []string        `json:"tools"`    // agent: what it can call
	Handoffs   []string        `json:"handoffs"` // agent: whom it can hand off to
}

// span is what is kept of one span: its place in the tree and the small
// facts the mapping needs, never its whole data.
type span struct {
	opt        importers.Options // its Clip caps every text kept
	id, parent string
	order      int // position in the file, a tie-break for equal start times
	start, end time.Time
	kind       string // agent, generation, response, function, handoff, task, turn, or another type
	name       string // agent, function or custom name
	err        string // the span's error: message and detail
	errData    string

	// generation / response
	model         string
	usage         record.Usage
	hasUsage      bool
	calls         []string // tool names the response called, when its output was recorded
	callsKnown    bool
	content       string
	firstUser     string
	request       []byte
	response      []byte
	turnUsage     *record.Usage // task / turn usage (a total, never added to a response's own)
	from, to      string        // handoff
	requested     []string      // handoff: the agents one response asked for, when it asked for several
	input, output string        // function
	tools         []string      // agent: its tools, then one transfer_to_<agent> per hand-off; nil when the span names none
	toolsKnown    bool

	children []*span
}

// trace is what is kept of one trace while the file is read.
type trace struct {
	id       string
	workflow string
	group    string
	order    int
	spans    map[string]*span
	ordered  []*span
	n        int // spans read, duplicates included
}

// collector gathers traces and spans as they are read.
type collector struct {
	path   string
	opt    importers.Options
	report importers.Report
	traces map[string]*trace
	order  []*trace
	n      int
	// truncated: the JSON document ended before it closed (a file still
	// being written); what was read stands.
	truncated bool

	// A streamed file's passes (Stream): the first counts each trace's
	// spans (count; trace.n) and keeps none; the second (emit set) hands
	// each trace over once it has the spans the first counted (want),
	// keeping no trace after.
	count bool
	want  map[string]int
	emit  func(string, *trace) error
}

func newCollector(path string, opt importers.Options) *collector {
	return &collector{path: path, opt: opt, traces: map[string]*trace{}}
}

func (c *collector) trace(id string) *trace {
	t := c.traces[id]
	if t == nil {
		t = &trace{id: id, order: len(c.order)}
		if !c.count {
			t.spans = map[string]*span{}
		}
		c.traces[id] = t
		if c.emit == nil {
			c.order = append(c.order, t)
		}
	}
	return t
}

// add takes in one decoded object read at line (or element) n.
func (c *collector) add(it *item, n int) error {
	switch it.Object {
	case "trace":
		if it.ID == "" {
			return c.report.Problem(c.opt, c.path, n, fmt.Errorf("trace without an id"))
		}
		t := c.trace(it.ID)
		t.workflow = it.WorkflowName
		if it.GroupID != nil {
			t.group = *it.GroupID
		}
		return nil
	case "trace.span":
	default:
		if it.Object == "" {
			c.report.Skip("object without an \"object\" field")
		} else {
			c.report.Skip("object " + it.Object)
		}
		return nil
	}
	if it.ID == "" || it.TraceID == "" {
		return c.report.Problem(c.opt, c.path, n, fmt.Errorf("span without an id or trace_id"))
	}
	var d spanData
	if len(it.SpanData) > 0 {
		if err := json.Unmarshal(it.SpanData, &d); err != nil {
			return c.report.Problem(c.opt, c.path, n, fmt.Errorf("span %s: span_data: %v", it.ID, err))
		}
	}
	t := c.trace(it.TraceID)
	s := &span{opt: c.opt, id: it.ID, order: c.n, kind: d.Type, name: d.Name}
	c.n++
	if it.ParentID != nil {
		s.parent = *it.ParentID
	}
	var err error
	if s.start, err = parseTime(it.StartedAt); err != nil {
		if perr := c.report.Problem(c.opt, c.path, n, fmt.Errorf("span %s: started_at: %v", it.ID, err)); perr != nil {
			return perr
		}
	}
	if s.end, err = parseTime(it.EndedAt); err != nil {
		if perr := c.report.Problem(c.opt, c.path, n, fmt.Errorf("span %s: ended_at: %v", it.ID, err)); perr != nil {
			return perr
		}
	}
	if it.Error != nil {
		s.err, s.errData = it.Error.Message, c.opt.Clip(errorDetail(it.Error.Data))
		var rq struct {
			Requested []string `json:"requested_agents"`
		}
		if json.Unmarshal(it.Error.Data, &rq) == nil {
			s.requested = rq.Requested
		}
	}
	switch d.Type {
	case "agent", "handoff":
		s.from, s.to = d.FromAgent, d.ToAgent
		if d.Type == "agent" && (d.Tools != nil || d.Handoffs != nil) {
			s.toolsKnown = true
			s.tools = append(s.tools, d.Tools...)
			for _, h := range d.Handoffs {
				s.tools = append(s.tools, handoffTool(h))
			}
		}
	case "generation":
		s.model = d.Model
		s.readGeneration(d)
	case "response":
		s.model = d.Model
		if u, ok := parseUsage(d.Usage); ok {
			s.usage, s.hasUsage = u, true
		}
	case "function":
		s.input, s.output = s.opt.Clip(rawText(d.Input)), s.opt.Clip(rawText(d.Output))
	case "custom":
		var cd struct {
			SDKSpanType string          `json:"sdk_span_type"`
			Name        string          `json:"name"`
			Usage       json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(d.Data, &cd)
		switch cd.SDKSpanType {
		case "task", "turn":
			s.kind = cd.SDKSpanType
			if u, ok := parseUsage(cd.Usage); ok {
				s.turnUsage = &u
			}
		default:
			s.kind = "custom"
		}
	case "task", "turn": // an SDK that exports them under their own type
		s.kind = d.Type
		if u, ok := parseUsage(d.Usage); ok {
			s.turnUsage = &u
		}
	case "guardrail", "mcp_tools", "transcription", "speech", "speech_group":
		c.report.Skip("span " + d.Type)
	default:
		c.report.Skip("span of unknown type " + fmt.Sprintf("%q", d.Type))
	}
	t.n++
	if c.count {
		return nil
	}
	if old := t.spans[s.id]; old != nil {
		// The same span twice (a processor that writes at start and at end):
		// the later one is the finished one.
		*old = *s
	} else {
		t.spans[s.id] = s
		t.ordered = append(t.ordered, s)
	}
	if c.emit != nil && t.n == c.want[t.id] {
		delete(c.traces, t.id)
		return c.emit(t.id, t)
	}
	return nil
}

// readGeneration keeps a generation span's usage, calls, text and the
// request and response it recorded (Chat Completions messages in, the
// completion out, when sensitive data was on).
func (s *span) readGeneration(d spanData) {
	if u, ok := parseUsage(d.Usage); ok {
		s.usage, s.hasUsage = u, true
	}
	var out []json.RawMessage
	if json.Unmarshal(d.Output, &out) == nil && len(out) > 0 {
		for _, o := range out {
			s.readOutput(o)
		}
		if len(d.Output) <= maxBody {
			resp := d.Output
			if len(out) == 1 {
				resp = out[0]
			}
			var b bytes.Buffer
			if json.Compact(&b, resp) == nil {
				s.response = b.Bytes()
			}
		}
	}
	var in []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(d.Input, &in) == nil && len(in) > 0 {
		for _, m := range in {
			if m.Role == "user" {
				s.firstUser = s.opt.Clip(importers.MessageText(m.Content))
				break
			}
		}
		if len(d.Input) <= maxBody {
			s.request, _ = chat.EncodeRawRequest(d.Model, d.Input)
		}
	}
}

// readOutput reads one recorded output: a chat completion, a Responses
// response, or one message (Python's generation output is a message list).
func (s *span) readOutput(o json.RawMessage) {
	var v struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
		Output []json.RawMessage `json:"output"`
		Usage  json.RawMessage   `json:"usage"`

		Role      string          `json:"role"`
		Type      string          `json:"type"`
		Name      string          `json:"name"`
		Content   json.RawMessage `json:"content"`
		ToolCalls []toolCall      `json:"tool_calls"`
	}
	if json.Unmarshal(o, &v) != nil {
		return
	}
	if !s.hasUsage {
		if u, ok := parseUsage(v.Usage); ok {
			s.usage, s.hasUsage = u, true
		}
	}
	switch {
	case len(v.Choices) > 0:
		s.readOutput(v.Choices[0].Message)
	case len(v.Output) > 0:
		for _, x := range v.Output {
			s.readOutput(x)
		}
	case v.Type == "function_call" || v.Type == "custom_tool_call":
		s.callsKnown = true
		s.calls = append(s.calls, v.Name)
	case v.Role == "assistant" || v.Type == "message":
		s.callsKnown = true
		if t := importers.MessageText(v.Content); t != "" && len(s.content) <= s.opt.TextCap() {
			s.content = s.opt.Clip(s.content + t)
		}
		for _, tc := range v.ToolCalls {
			name := tc.Function.Name
			if name == "" {
				name = tc.Custom.Name
			}
			s.calls = append(s.calls, name)
		}
	}
}

type toolCall struct {
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
	Custom struct {
		Name string `json:"name"`
	} `json:"custom"`
}

// rawText returns a JSON string's value, or the raw JSON of anything else.
func rawText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// handoffTool is the name of the tool the SDK gives a hand-off to agent:
// transfer_to_ and the agent's name as a function name (lower case, every
// other character an underscore).
func handoffTool(agent string) string {
	b := []byte("transfer_to_")
	for _, r := range strings.ToLower(agent) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' {
			b = append(b, byte(r))
		} else {
			b = append(b, '_')
		}
	}
	return string(b)
}

// errorDetail reads the error data the SDK adds: {"error": "..."} or
// {"tool_name": ..., "error": ...}.
func errorDetail(raw json.RawMessage) string {
	var d struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return ""
	}
	return rawText(d.Error)
}

// parseTime reads an ISO-8601 time (JS toISOString, Python isoformat).
func parseTime(s *string) (time.Time, error) {
	if s == nil || *s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999Z07:00"} {
		if t, err := time.Parse(layout, *s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not an ISO-8601 time: %q", *s)
}

// parseUsage reads the usage shapes the SDKs write: the Python generation
// usage {input_tokens, output_tokens, input_tokens_details, ...}, the
// ingest form {input_tokens, output_tokens, details: {...}}, a Chat
// Completions usage {prompt_tokens, completion_tokens, ...} and the
// task/turn form {input_tokens, cached_input_tokens, cache_write_input_tokens}.
// input_tokens include cache reads and writes (OpenAI semantics).
func parseUsage(raw json.RawMessage) (record.Usage, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return record.Usage{}, false
	}
	type details struct {
		CachedTokens     *int64 `json:"cached_tokens"`
		CacheWriteTokens *int64 `json:"cache_write_tokens"`
		ReasoningTokens  *int64 `json:"reasoning_tokens"`
	}
	type usage struct {
		InputTokens           *int64   `json:"input_tokens"`
		OutputTokens          *int64   `json:"output_tokens"`
		PromptTokens          *int64   `json:"prompt_tokens"`
		CompletionTokens      *int64   `json:"completion_tokens"`
		CachedInputTokens     *int64   `json:"cached_input_tokens"`
		CacheWriteInputTokens *int64   `json:"cache_write_input_tokens"`
		CachedTokens          *int64   `json:"cached_tokens"`
		CacheWriteTokens      *int64   `json:"cache_write_tokens"`
		ReasoningTokens       *int64   `json:"reasoning_tokens"`
		InputDetails          *details `json:"input_tokens_details"`
		OutputDetails         *details `json:"output_tokens_details"`
		PromptDetails         *details `json:"prompt_tokens_details"`
		CompletionDetails     *details `json:"completion_tokens_details"`
	}
	var u struct {
		usage
		Details *usage `json:"details"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return record.Usage{}, false
	}
	var r record.Usage
	seen := false
	first := func(ps ...*int64) (int64, bool) {
		for _, p := range ps {
			if p != nil {
				return *p, true
			}
		}
		return 0, false
	}
	all := []*usage{&u.usage}
	if u.Details != nil {
		all = append(all, u.Details)
	}
	pick := func(f func(*usage) []*int64) (int64, bool) {
		for _, x := range all {
			if v, ok := first(f(x)...); ok {
				return v, true
			}
		}
		return 0, false
	}
	det := func(d *details, f func(*details) *int64) *int64 {
		if d == nil {
			return nil
		}
		return f(d)
	}
	cached := func(d *details) *int64 { return d.CachedTokens }
	write := func(d *details) *int64 { return d.CacheWriteTokens }
	reason := func(d *details) *int64 { return d.ReasoningTokens }
	if v, ok := pick(func(x *usage) []*int64 { return []*int64{x.InputTokens, x.PromptTokens} }); ok {
		r.In, seen = v, true
	}
	if v, ok := pick(func(x *usage) []*int64 { return []*int64{x.OutputTokens, x.CompletionTokens} }); ok {
		r.Out, seen = v, true
	}
	if v, ok := pick(func(x *usage) []*int64 {
		return []*int64{x.CachedInputTokens, x.CachedTokens, det(x.InputDetails, cached), det(x.PromptDetails, cached)}
	}); ok {
		r.Cached, r.CachedReported = v, true
	}
	if v, ok := pick(func(x *usage) []*int64 {
		return []*int64{x.CacheWriteInputTokens, x.CacheWriteTokens, det(x.InputDetails, write), det(x.PromptDetails, write)}
	}); ok {
		r.CacheWrite, r.CacheWriteReported = v, true
	}
	if v, ok := pick(func(x *usage) []*int64 {
		return []*int64{x.ReasoningTokens, det(x.OutputDetails, reason), det(x.CompletionDetails, reason)}
	}); ok {
		r.Reasoning, r.ReasoningReported = v, true
	}
	if !seen {
		return record.Usage{}, false
	}
	r.Clamp()
	return r, true
}
