package ask

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/inspect-dev/inspect/chat"
)

// A request that was not recorded byte for byte (an importer rebuilt it),
// or that goes to another API than the one it was recorded for, is
// written anew from what chat reads of it: a conversation, neutral of
// format. Before it is written it is made one every API accepts
// (conversation.valid), and each change is said (the plan's notes).

// The texts ask puts in a rebuilt conversation where the recording has
// nothing the API would accept.
const (
	// EarlierNotRecorded opens a conversation whose recording starts
	// after its first user message (an excerpt, a sub-agent whose prompt
	// was not recorded): every API wants a user message first.
	EarlierNotRecorded = "[inspect: the conversation before this point was not recorded]"
	// ResultNotRecorded answers a recorded tool call whose result the
	// recording lacks (an interrupted turn): every call must be answered.
	ResultNotRecorded = "[inspect: this call's result was not recorded]"
	// ToolNotRecorded is the description of a tool sent by name only: the
	// recording names it in a call but holds no definition of it.
	ToolNotRecorded = "[inspect: this tool's definition was not recorded; only its name is known]"
	// EmptyAssistant stands for an assistant turn the recording holds
	// nothing of (Anthropic refuses empty content).
	EmptyAssistant = "(no content)"
)

// DefaultMaxTokens is the max_tokens of an Anthropic request ask writes
// anew (the API requires one; every Claude model accepts this many).
const DefaultMaxTokens = 4096

// conversation is what a rebuilt request holds.
type conversation struct {
	Model    string
	System   string
	Tools    []chat.Tool
	Messages []chat.Message // user, assistant (text, calls) and tool messages; no system ones
}

// fromRequest is the conversation of a request read by chat.
func fromRequest(r *chat.Request) *conversation {
	c := &conversation{Model: r.Model, System: r.System, Tools: append([]chat.Tool(nil), r.Tools...)}
	for _, m := range r.Messages {
		if isSystem(m.Role) {
			// Its text is in System (Chat Completions, Responses); an
			// Anthropic system message between the turns is added to it.
			if t := strings.TrimSpace(m.Text); t != "" && !strings.Contains(c.System, t) {
				c.System = strings.TrimLeft(c.System+"\n\n"+m.Text, "\n")
			}
			continue
		}
		m.Calls = append([]chat.Call(nil), m.Calls...)
		c.Messages = append(c.Messages, m)
	}
	return c
}

// withTurn appends a recorded assistant turn, a NotRun result for each of
// its calls, and the question as a user message.
func (c *conversation) withTurn(rm *chat.Message, question string) {
	asst := chat.Message{Role: "assistant", Text: rm.Text, Calls: append([]chat.Call(nil), rm.Calls...)}
	for i := range asst.Calls {
		if asst.Calls[i].ID == "" {
			asst.Calls[i].ID = fmt.Sprintf("call_%d", i)
		}
	}
	c.Messages = append(c.Messages, asst)
	for _, call := range asst.Calls {
		c.Messages = append(c.Messages, chat.Message{Role: "tool", CallID: call.ID, Text: NotRun})
	}
	c.Messages = append(c.Messages, chat.Message{Role: "user", Text: question})
}

// nameRE is what Anthropic's and OpenAI's APIs accept as a tool name, and
// Anthropic as a tool_use id.
var (
	nameRE  = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	idRE    = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)
	badChar = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
)

// safeName is name as the APIs accept it: characters outside
// [a-zA-Z0-9_-] become _, cut at 64.
func safeName(name string) string {
	if nameRE.MatchString(name) {
		return name
	}
	s := badChar.ReplaceAllString(name, "_")
	if s == "" {
		s = "tool"
	}
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// valid makes c a conversation every API accepts, and says what it
// changed: system messages are in System; each call has a unique id; the
// first message is a user message; every call is answered by a tool
// message right after its assistant message, and a tool message answers a
// call of the assistant message just before it (one that does not
// becomes a user message quoting it); empty messages are left out; a
// call's arguments are a JSON object; tool names are ones the APIs accept;
// every tool called is defined (by name only when the recording holds no
// definition).
func (c *conversation) valid() (fixes []string) {
	var (
		out        []chat.Message
		pending    []chat.Call // calls of the last assistant message not answered yet
		answered   = map[string]bool{}
		ids        = map[string]bool{}
		unanswered []string
		orphans    int
		empty      int
		args       []string
		dropped    []string // content parts that are not text
	)
	closeCalls := func() {
		for _, call := range pending {
			if !answered[call.ID] {
				out = append(out, chat.Message{Role: "tool", CallID: call.ID, Text: ResultNotRecorded})
				unanswered = append(unanswered, call.Name)
			}
		}
		pending, answered = nil, map[string]bool{}
	}
	for i, m := range c.Messages {
		for _, p := range m.Parts {
			switch p.Type {
			case "text", "input_text", "output_text", "", "thinking", "redacted_thinking", "reasoning":
			default:
				dropped = append(dropped, p.Type)
			}
		}
		switch m.Role {
		case "tool":
			if inCalls(pending, m.CallID) && !answered[m.CallID] {
				answered[m.CallID] = true
				out = append(out, m)
				continue
			}
			closeCalls()
			orphans++
			t := m.Text
			if strings.TrimSpace(t) == "" {
				t = "(empty)"
			}
			out = append(out, chat.Message{Role: "user", Text: fmt.Sprintf("[inspect: the result of a tool call this request does not hold (id %s)]\n%s", m.CallID, t)})
		case "assistant":
			closeCalls()
			if strings.TrimSpace(m.Text) == "" && len(m.Calls) == 0 {
				empty++
				continue
			}
			for j := range m.Calls {
				call := &m.Calls[j]
				if call.ID == "" || ids[call.ID] {
					call.ID = fmt.Sprintf("call_%d_%d", i, j)
				}
				ids[call.ID] = true
				a, ok := objectArgs(call.Arguments)
				if !ok {
					args = append(args, call.Name)
				}
				call.Arguments = a
			}
			out = append(out, m)
			pending = m.Calls
		default: // user, and roles chat could not read
			closeCalls()
			if strings.TrimSpace(m.Text) == "" {
				empty++
				continue
			}
			out = append(out, chat.Message{Role: "user", Name: m.Name, Text: m.Text, Parts: m.Parts})
		}
	}
	closeCalls()
	if len(out) == 0 || out[0].Role != "user" {
		out = append([]chat.Message{{Role: "user", Text: EarlierNotRecorded}}, out...)
		fixes = append(fixes, "the recorded conversation does not start with a user message: a user message saying the earlier part was not recorded opens it")
	}
	c.Messages = out
	if len(unanswered) > 0 {
		fixes = append(fixes, fmt.Sprintf("%d recorded tool call(s) have no recorded result (%s): each is answered %q", len(unanswered), strings.Join(unique(unanswered), ", "), ResultNotRecorded))
	}
	if orphans > 0 {
		fixes = append(fixes, fmt.Sprintf("%d tool result(s) answer a call the request does not hold: each is sent as a user message quoting it", orphans))
	}
	if empty > 0 {
		fixes = append(fixes, fmt.Sprintf("%d empty message(s) left out", empty))
	}
	if len(dropped) > 0 {
		fixes = append(fixes, fmt.Sprintf("%d content part(s) that are not text (%s) are not sent: only the messages' text is", len(dropped), strings.Join(unique(dropped), ", ")))
	}
	if len(args) > 0 {
		fixes = append(fixes, fmt.Sprintf("the arguments of %d call(s) (%s) are not a JSON object: sent as {\"input\": <the text>}", len(args), strings.Join(unique(args), ", ")))
	}
	fixes = append(fixes, c.validTools()...)
	return fixes
}

// validTools makes tool names ones the APIs accept, in the tools and the
// calls alike, and defines each tool called that the request does not.
func (c *conversation) validTools() (fixes []string) {
	var renamed []string
	rename := map[string]string{}
	safe := func(name string) string {
		if s, ok := rename[name]; ok {
			return s
		}
		s := safeName(name)
		rename[name] = s
		if s != name {
			renamed = append(renamed, fmt.Sprintf("%q as %s", name, s))
		}
		return s
	}
	defined := map[string]bool{}
	for i := range c.Tools {
		c.Tools[i].Name = safe(c.Tools[i].Name)
		defined[c.Tools[i].Name] = true
	}
	var added []string
	for i := range c.Messages {
		for j := range c.Messages[i].Calls {
			call := &c.Messages[i].Calls[j]
			call.Name = safe(call.Name)
			if !defined[call.Name] {
				defined[call.Name] = true
				added = append(added, call.Name)
				c.Tools = append(c.Tools, chat.Tool{Name: call.Name, Description: ToolNotRecorded})
			}
		}
	}
	if len(renamed) > 0 {
		fixes = append(fixes, "tool names the APIs refuse are sent as names they accept: "+strings.Join(renamed, ", "))
	}
	if len(added) > 0 {
		fixes = append(fixes, fmt.Sprintf("the definitions of %d tool(s) called in the conversation were not recorded: sent by name only, with an open input schema (%s)", len(added), strings.Join(added, ", ")))
	}
	return fixes
}

func inCalls(calls []chat.Call, id string) bool {
	for _, c := range calls {
		if c.ID == id {
			return true
		}
	}
	return false
}

func unique(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// objectArgs is a call's arguments as a JSON object's text: the arguments
// when they are one ("" is {}), else {"input": <the text>} and false.
func objectArgs(a string) (string, bool) {
	t := strings.TrimSpace(a)
	if t == "" {
		return "{}", true
	}
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &o) == nil && o != nil {
		return a, true
	}
	b, _ := marshal(map[string]string{"input": a})
	return string(b), false
}

// schema is a tool's input schema: the recorded one when it is a JSON
// object, else an open one.
func schema(p json.RawMessage) json.RawMessage {
	var o map[string]json.RawMessage
	if len(p) > 0 && json.Unmarshal(p, &o) == nil && o != nil {
		if _, ok := o["type"]; ok {
			return p
		}
	}
	return json.RawMessage(`{"type":"object"}`)
}

// encoding: what the writers of each format are given besides the
// conversation.
type encoding struct {
	// ToolChoiceNone asks the model to answer in words (only written when
	// the request has tools).
	ToolChoiceNone bool
	// Stream asks for an event stream.
	Stream bool
	// MaxTokens is Anthropic's max_tokens (0 = DefaultMaxTokens).
	MaxTokens int
}

// encode writes c in format f. c must be valid.
func (c *conversation) encode(f chat.Format, e encoding) ([]byte, error) {
	switch f {
	case chat.Anthropic:
		return c.anthropic(e)
	case chat.OpenAIResponses:
		return c.responses(e)
	}
	return c.chat(e)
}

// Chat Completions, as the API documents a request.
type (
	chatBody struct {
		Model         string          `json:"model"`
		Messages      []chatMsg       `json:"messages"`
		Tools         []chatTool      `json:"tools,omitempty"`
		ToolChoice    string          `json:"tool_choice,omitempty"`
		Stream        bool            `json:"stream,omitempty"`
		StreamOptions json.RawMessage `json:"stream_options,omitempty"`
	}
	chatMsg struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"`
		Name       string         `json:"name,omitempty"`
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	chatTool struct {
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	chatFunction struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
)

func (c *conversation) chat(e encoding) ([]byte, error) {
	b := chatBody{Model: c.Model}
	if c.System != "" {
		s := c.System
		b.Messages = append(b.Messages, chatMsg{Role: "system", Content: &s})
	}
	for _, m := range c.Messages {
		cm := chatMsg{Role: m.Role, ToolCallID: m.CallID}
		if m.Role == "user" {
			cm.Name = m.Name
		}
		if m.Text != "" || len(m.Calls) == 0 {
			t := m.Text
			cm.Content = &t
		}
		for _, call := range m.Calls {
			cm.ToolCalls = append(cm.ToolCalls, wireToolCall{ID: call.ID, Type: "function", Function: wireFunction{Name: call.Name, Arguments: call.Arguments}})
		}
		b.Messages = append(b.Messages, cm)
	}
	for _, t := range c.Tools {
		b.Tools = append(b.Tools, chatTool{Type: "function", Function: chatFunction{Name: t.Name, Description: t.Description, Parameters: schema(t.Parameters)}})
	}
	if e.ToolChoiceNone && len(b.Tools) > 0 {
		b.ToolChoice = "none"
	}
	if e.Stream {
		b.Stream, b.StreamOptions = true, json.RawMessage(`{"include_usage":true}`)
	}
	return marshal(b)
}

// Anthropic Messages, as the API documents a request.
type (
	anthropicBody struct {
		Model      string             `json:"model"`
		MaxTokens  int                `json:"max_tokens"`
		System     string             `json:"system,omitempty"`
		Messages   []anthropicMessage `json:"messages"`
		Tools      []anthropicTool    `json:"tools,omitempty"`
		ToolChoice json.RawMessage    `json:"tool_choice,omitempty"`
		Stream     bool               `json:"stream,omitempty"`
	}
	anthropicMessage struct {
		Role    string           `json:"role"`
		Content []anthropicBlock `json:"content"`
	}
	anthropicBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
		IsError   bool            `json:"is_error,omitempty"`
	}
	anthropicTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
)

// anthropicID is a call id as Anthropic accepts one (letters, digits, _
// and -), the same for a call and its result.
func anthropicID(id string) string {
	if idRE.MatchString(id) {
		return id
	}
	s := badChar.ReplaceAllString(id, "_")
	if s == "" {
		s = "call"
	}
	return s
}

// anthropic writes c as Messages: user and tool messages make user turns
// (tool results first, as the API wants them), assistant messages
// assistant turns; consecutive messages of one role are one turn, so the
// roles alternate.
func (c *conversation) anthropic(e encoding) ([]byte, error) {
	b := anthropicBody{Model: c.Model, MaxTokens: e.MaxTokens, System: c.System}
	if b.MaxTokens <= 0 {
		b.MaxTokens = DefaultMaxTokens
	}
	for _, m := range c.Messages {
		role := "user"
		if m.Role == "assistant" {
			role = "assistant"
		}
		var blocks []anthropicBlock
		switch m.Role {
		case "assistant":
			if strings.TrimSpace(m.Text) != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
			}
			for _, call := range m.Calls {
				blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: anthropicID(call.ID), Name: call.Name, Input: json.RawMessage(call.Arguments)})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: EmptyAssistant})
			}
		case "tool":
			blocks = append(blocks, anthropicBlock{Type: "tool_result", ToolUseID: anthropicID(m.CallID), Content: m.Text, IsError: m.IsError})
		default:
			blocks = append(blocks, anthropicBlock{Type: "text", Text: m.Text})
		}
		if n := len(b.Messages); n > 0 && b.Messages[n-1].Role == role {
			last := &b.Messages[n-1]
			if m.Role == "tool" { // results go before the turn's text
				k := 0
				for k < len(last.Content) && last.Content[k].Type == "tool_result" {
					k++
				}
				last.Content = append(last.Content[:k], append(blocks, last.Content[k:]...)...)
			} else {
				last.Content = append(last.Content, blocks...)
			}
			continue
		}
		b.Messages = append(b.Messages, anthropicMessage{Role: role, Content: blocks})
	}
	for _, t := range c.Tools {
		b.Tools = append(b.Tools, anthropicTool{Name: t.Name, Description: t.Description, InputSchema: schema(t.Parameters)})
	}
	if e.ToolChoiceNone && len(b.Tools) > 0 {
		b.ToolChoice = json.RawMessage(`{"type":"none"}`)
	}
	b.Stream = e.Stream
	return marshal(b)
}

// OpenAI Responses, as the API documents a request.
type (
	responsesBody struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions,omitempty"`
		Input        []responsesItem `json:"input"`
		Tools        []responsesTool `json:"tools,omitempty"`
		ToolChoice   string          `json:"tool_choice,omitempty"`
		Stream       bool            `json:"stream,omitempty"`
	}
	responsesItem struct {
		Type      string  `json:"type"`
		Role      string  `json:"role,omitempty"`
		Content   string  `json:"content,omitempty"`
		CallID    string  `json:"call_id,omitempty"`
		Name      string  `json:"name,omitempty"`
		Arguments string  `json:"arguments,omitempty"`
		Output    *string `json:"output,omitempty"`
	}
	responsesTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	}
)

// responses writes c as a Responses request: the system text as
// instructions, messages as message items, calls as function_call items
// and results as function_call_output items.
func (c *conversation) responses(e encoding) ([]byte, error) {
	b := responsesBody{Model: c.Model, Instructions: c.System, Input: []responsesItem{}}
	for _, m := range c.Messages {
		switch m.Role {
		case "assistant":
			if strings.TrimSpace(m.Text) != "" {
				b.Input = append(b.Input, responsesItem{Type: "message", Role: "assistant", Content: m.Text})
			}
			for _, call := range m.Calls {
				b.Input = append(b.Input, responsesItem{Type: "function_call", CallID: call.ID, Name: call.Name, Arguments: call.Arguments})
			}
		case "tool":
			out := m.Text
			b.Input = append(b.Input, responsesItem{Type: "function_call_output", CallID: m.CallID, Output: &out})
		default:
			b.Input = append(b.Input, responsesItem{Type: "message", Role: "user", Content: m.Text})
		}
	}
	for _, t := range c.Tools {
		b.Tools = append(b.Tools, responsesTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: schema(t.Parameters)})
	}
	if e.ToolChoiceNone && len(b.Tools) > 0 {
		b.ToolChoice = "none"
	}
	b.Stream = e.Stream
	return marshal(b)
}
