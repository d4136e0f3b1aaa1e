// Package chat reads the request and response bodies of model calls in the
// wire formats inspect meets: OpenAI Chat Completions (what our runtime
// sends, and what every OpenAI-compatible server speaks), OpenAI Responses
// and Anthropic Messages. Each reader gives the same neutral types: the
// system text, the tools offered, the messages with their text, tool calls
// and tool results, and for a response the assistant message, its finish
// reason and its usage.
//
// It is the one place that knows these formats; findings, ask, show and
// the importers read bodies through it, and the importers write the Chat
// Completions bodies they rebuild for calls their sources kept no bytes of
// through it too (encode.go). Nothing here re-encodes a recorded body (ask
// edits recorded bytes itself, so that the prefix it sends stays
// byte-identical).
//
// Reading is lenient. A field of an unexpected type is ignored, an unknown
// content part or input item is skipped, a tool call's arguments that are
// an object rather than a JSON string are kept as their JSON text. What a
// reader cannot read at all (not JSON, not an object, no messages array in
// a Chat Completions request, an error body where a response was expected)
// gives an error that says so; nothing panics, whatever the bytes.
//
// Two definitions the callers rely on:
//
//   - The text of a message (Message.Text) is its string content, or the
//     text of its text parts ("text", "input_text", "output_text")
//     concatenated in order with nothing between them, as the model reads
//     them. Other parts (images, audio, refusals, thinking) are listed in
//     Message.Parts but are not text.
//   - The system text (Request.System) is every piece of system prompt the
//     request holds, in order, joined by a blank line ("\n\n"): in Chat
//     Completions the text of each system and developer message; in
//     Responses the instructions, then each system and developer input
//     message; in Anthropic Messages the system string, or each of its text
//     blocks. "" when there is none.
package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// Format is a wire format of model calls.
type Format string

// The formats read.
const (
	// OpenAIChat is OpenAI Chat Completions (POST /chat/completions), also
	// spoken by vLLM, Ollama, llama.cpp server, DeepSeek and the others.
	OpenAIChat Format = "openai-chat"
	// OpenAIResponses is the OpenAI Responses API (POST /responses).
	OpenAIResponses Format = "openai-responses"
	// Anthropic is the Anthropic Messages API (POST /v1/messages).
	Anthropic Format = "anthropic-messages"
)

// Formats lists every format, in the order Detect tries them.
var Formats = []Format{OpenAIChat, OpenAIResponses, Anthropic}

// Request is a model call's request body, read.
type Request struct {
	// Format is the wire format the body was read as.
	Format Format
	// Model is the model asked for, or "".
	Model string
	// System is the system text (see the package doc), or "".
	System string
	// Tools are the tools offered, in order.
	Tools []Tool
	// ToolChoice is the tool_choice value exactly as the body holds it
	// (JSON text), or nil.
	ToolChoice json.RawMessage
	// Stream reports whether the request asked for a streamed response.
	Stream bool
	// Messages are the messages, in order. In Chat Completions there is one
	// per element of the messages array (system messages included; an
	// element that is not an object gives an empty Message), so an index
	// here is an index into that array. In Responses they are the input
	// items (consecutive function calls join the assistant message before
	// them; a function call output is a tool message; other item types are
	// skipped); in Anthropic Messages, the messages, a user message's
	// tool_result blocks each becoming a tool message of its own.
	Messages []Message
}

// Tool returns the offered tool called name, or nil.
func (r *Request) Tool(name string) *Tool {
	for i := range r.Tools {
		if r.Tools[i].Name == name {
			return &r.Tools[i]
		}
	}
	return nil
}

// ToolNames returns the names of the offered tools, in order.
func (r *Request) ToolNames() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Name
	}
	return out
}

// Tool is one tool a request offers.
type Tool struct {
	// Name is the function's name (for a provider's built-in tool without
	// a name, its type, e.g. "web_search_preview").
	Name string
	// Description is the tool's description, or "".
	Description string
	// Parameters is the tool's JSON schema as the body holds it (Chat
	// Completions and Responses "parameters", Anthropic "input_schema"), or nil.
	Parameters json.RawMessage
}

// Message is one message of a conversation.
type Message struct {
	// Role is system, developer, user, assistant or tool (a tool result);
	// "" for an element that could not be read.
	Role string
	// Name is the participant name some requests give, or "".
	Name string
	// Text is the message's text (see the package doc).
	Text string
	// Parts are the content parts when the content was a list of them
	// (nil for string content), each with its type.
	Parts []Part
	// Calls are the tool calls an assistant message makes, in order.
	Calls []Call
	// CallID is, for a tool message, the id of the call it answers.
	CallID string
	// IsError is set on a tool message the body marks as an error result
	// (Anthropic's is_error).
	IsError bool
}

// CallNames returns the names of the message's tool calls, in order.
func (m *Message) CallNames() []string {
	out := make([]string, len(m.Calls))
	for i, c := range m.Calls {
		out[i] = c.Name
	}
	return out
}

// Part is one content part of a message.
type Part struct {
	// Type is the part's type as the body names it ("text", "image_url",
	// "input_text", "thinking", …).
	Type string
	// Text is the part's text: the text of a text part, the refusal of a
	// refusal part, the thinking of a thinking block; "" for others.
	Text string
}

// Call is one tool call.
type Call struct {
	// ID is the call's id (tool_calls[].id, call_id, tool_use id), or "".
	ID string
	// Name is the tool called.
	Name string
	// Arguments are the call's arguments as JSON text: the string Chat
	// Completions and Responses send, the input object Anthropic sends.
	Arguments string
}

// Response is a model call's response body, read.
type Response struct {
	// Format is the wire format the body was read as.
	Format Format
	// ID is the provider's response id, or "".
	ID string
	// Model is the model the provider says answered, or "".
	Model string
	// Message is the assistant message (of the first choice, in Chat
	// Completions): its text and its tool calls.
	Message Message
	// FinishReason is why the response ended, as the provider puts it
	// (finish_reason, the Responses status or incomplete reason,
	// stop_reason), or "".
	FinishReason string
	// Usage is the token usage, normalised as record.Usage says (In counts
	// cache reads and writes), when the body reports one; else nil.
	Usage *record.Usage
	// UsageJSON is the usage object exactly as the body holds it, or nil.
	UsageJSON json.RawMessage
}

// ErrorBody is a provider's error response, read where a response was
// expected.
type ErrorBody struct {
	// Type and Code are the provider's error type and code, when given.
	Type, Code string
	// Message is the provider's message.
	Message string
}

// Error says the response is an error and quotes the provider's message.
func (e *ErrorBody) Error() string {
	msg := e.Message
	if msg == "" {
		msg = strings.TrimSpace(e.Type + " " + e.Code)
	}
	if msg == "" {
		msg = "no message"
	}
	return "the response is an error: " + msg
}

// StreamError is an error event inside an event stream.
type StreamError struct {
	// Message is the provider's message.
	Message string
}

// Error says the provider sent an error in the stream.
func (e *StreamError) Error() string {
	return "the provider sent an error in the stream: " + e.Message
}

// errEmpty is the error for an empty body.
var errEmpty = errors.New("the body is empty")

// ReadRequest reads a request body in format f, or in the format Detect
// finds when f is "".
func ReadRequest(body []byte, f Format) (*Request, error) {
	o, err := top(body)
	if err != nil {
		return nil, fmt.Errorf("read request: %w", err)
	}
	if f == "" {
		if f, err = detectObject(o); err != nil {
			return nil, fmt.Errorf("read request: %w", err)
		}
	}
	var r *Request
	switch f {
	case OpenAIChat:
		r, err = chatRequest(o)
	case OpenAIResponses:
		r, err = responsesRequest(o)
	case Anthropic:
		r, err = anthropicRequest(o)
	default:
		err = unknownFormat(f)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s request: %w", f, err)
	}
	return r, nil
}

// ReadResponse reads a response body in format f, or in the format Detect
// finds when f is "". A body may be a recorded event stream (as
// ReadEventStream reads it). An error body gives an
// *ErrorBody.
func ReadResponse(body []byte, f Format) (*Response, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return nil, fmt.Errorf("read response: %w", errEmpty)
	}
	if t[0] != '{' {
		if f == "" {
			var err error
			if f, err = Detect(t); err != nil {
				return nil, fmt.Errorf("read response: %w", err)
			}
		}
		return ReadEventStream(bytes.NewReader(t), f, nil)
	}
	o, err := top(t)
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	if e := errorBody(o); e != nil {
		return nil, e
	}
	if f == "" {
		if f, err = detectObject(o); err != nil {
			return nil, fmt.Errorf("read response: %w", err)
		}
	}
	var r *Response
	switch f {
	case OpenAIChat:
		r, err = chatResponse(o)
	case OpenAIResponses:
		r, err = responsesResponse(o)
	case Anthropic:
		r, err = anthropicResponse(o)
	default:
		err = unknownFormat(f)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s response: %w", f, err)
	}
	return r, nil
}

func unknownFormat(f Format) error {
	names := make([]string, len(Formats))
	for i, x := range Formats {
		names[i] = string(x)
	}
	return fmt.Errorf("unknown format %q (the formats are %s)", f, strings.Join(names, ", "))
}

// Detect tells which format a request or response body is in, from its
// shape: Chat Completions has "choices" (a response) or a "messages" array
// of OpenAI roles; Responses has "input" or "instructions" (a request) or
// an "output" array / object "response"; Anthropic Messages has a
// top-level "system", tools with "input_schema" or tool_use / tool_result
// blocks (a request), or type "message" (a response). An event stream is
// told by its first event. A body that matches none is an error naming
// the formats tried.
func Detect(body []byte) (Format, error) {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return "", errEmpty
	}
	if t[0] != '{' {
		return detectStream(t)
	}
	o, err := top(t)
	if err != nil {
		return "", err
	}
	return detectObject(o)
}

func detectObject(o obj) (Format, error) {
	switch o.str("object") {
	case "chat.completion", "chat.completion.chunk":
		return OpenAIChat, nil
	case "response":
		return OpenAIResponses, nil
	}
	switch o.str("type") {
	case "message", "error", "message_start":
		return Anthropic, nil
	}
	switch {
	case o.has("choices"):
		return OpenAIChat, nil
	case o.has("messages"):
		if looksAnthropic(o) {
			return Anthropic, nil
		}
		return OpenAIChat, nil
	case o.has("input"), o.has("instructions"), o.has("output"):
		return OpenAIResponses, nil
	case o.has("error"):
		return OpenAIChat, nil // an OpenAI-style error body
	}
	return "", errors.New("not a body of a format we read (tried OpenAI Chat Completions, OpenAI Responses, Anthropic Messages)")
}

// looksAnthropic tells an Anthropic Messages request from a Chat
// Completions one: a top-level system, anthropic_version, a tool with
// input_schema, or a content block only Anthropic has.
func looksAnthropic(o obj) bool {
	if o.has("system") || o.has("anthropic_version") {
		return true
	}
	for _, t := range array(o["tools"]) {
		if object(t).has("input_schema") {
			return true
		}
	}
	for _, m := range array(o["messages"]) {
		for _, b := range array(object(m)["content"]) {
			switch object(b).str("type") {
			case "tool_use", "tool_result", "thinking", "redacted_thinking":
				return true
			}
		}
	}
	return false
}

func detectStream(t []byte) (Format, error) {
	for line := range bytes.Lines(t) {
		data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue
		}
		o, err := top(data)
		if err != nil {
			continue // [DONE] or a broken event
		}
		if strings.HasPrefix(o.str("type"), "response.") {
			return OpenAIResponses, nil
		}
		return detectObject(o)
	}
	return "", errors.New("not a JSON object, nor an event stream of JSON events")
}

// obj is a JSON object whose members are read on demand.
type obj map[string]json.RawMessage

// top decodes b as one JSON object.
func top(b []byte) (obj, error) {
	t := bytes.TrimSpace(b)
	if len(t) == 0 {
		return nil, errEmpty
	}
	if t[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var o obj
	if err := json.Unmarshal(t, &o); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	return o, nil
}

// object reads raw as an object, or nil.
func object(raw json.RawMessage) obj {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var o obj
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o
}

// array reads raw as an array, or nil.
func array(raw json.RawMessage) []json.RawMessage {
	if len(raw) == 0 || raw[0] != '[' {
		return nil
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return a
}

// text reads raw as a string, or "".
func text(raw json.RawMessage) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func (o obj) has(key string) bool {
	v, ok := o[key]
	return ok && string(v) != "null"
}

func (o obj) str(key string) string { return text(o[key]) }

func (o obj) boolean(key string) bool {
	var b bool
	_ = json.Unmarshal(o[key], &b)
	return b
}

// int reads key as a whole number; ok is false when it is absent or not one.
func (o obj) int(key string) (n int64, ok bool) {
	raw, found := o[key]
	if !found {
		return 0, false
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		var f float64
		if json.Unmarshal(raw, &f) != nil || f != f || f > 1<<62 || f < -(1<<62) {
			return 0, false
		}
		n = int64(f)
	}
	return n, true
}

// raw returns the member's JSON text, or nil when absent or null.
func (o obj) raw(key string) json.RawMessage {
	if !o.has(key) {
		return nil
	}
	return o[key]
}

// argsText is a call's arguments as JSON text: the string when the body
// holds a string, else the value's own JSON text.
func argsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		return text(raw)
	}
	return string(raw)
}

// content reads a message content: a string, or a list of parts (or one
// part object). The text is the string, or the text parts concatenated.
func content(raw json.RawMessage) (string, []Part) {
	switch {
	case len(raw) == 0:
		return "", nil
	case raw[0] == '"':
		return text(raw), nil
	case raw[0] == '{':
		return parts([]json.RawMessage{raw})
	case raw[0] == '[':
		return parts(array(raw))
	}
	return "", nil
}

func parts(items []json.RawMessage) (string, []Part) {
	var b strings.Builder
	out := make([]Part, 0, len(items))
	for _, it := range items {
		if len(it) > 0 && it[0] == '"' { // a bare string in a list of parts
			s := text(it)
			b.WriteString(s)
			out = append(out, Part{Type: "text", Text: s})
			continue
		}
		p := object(it)
		if p == nil {
			continue
		}
		typ := p.str("type")
		part := Part{Type: typ}
		switch typ {
		case "text", "input_text", "output_text", "":
			part.Text = p.str("text")
			b.WriteString(part.Text)
		case "refusal":
			part.Text = p.str("refusal")
		case "thinking":
			part.Text = p.str("thinking")
		}
		out = append(out, part)
	}
	return b.String(), out
}

// joinSystem joins the pieces of system text with a blank line.
func joinSystem(pieces []string) string { return strings.Join(pieces, "\n\n") }

func isSystem(role string) bool { return role == "system" || role == "developer" }

// errorBody returns the error an error response holds, or nil: OpenAI's
// {"error": {...}} (or a string), Anthropic's {"type": "error", "error": {...}}.
func errorBody(o obj) *ErrorBody {
	if !o.has("error") {
		return nil
	}
	raw := o["error"]
	if s := text(raw); s != "" {
		return &ErrorBody{Message: s}
	}
	e := object(raw)
	if e == nil {
		return nil
	}
	code := e.str("code")
	if code == "" {
		if n, ok := e.int("code"); ok {
			code = fmt.Sprint(n)
		}
	}
	return &ErrorBody{Type: e.str("type"), Code: code, Message: e.str("message")}
}

// ReadMessage reads one element of a request's messages array on its own:
// the message ReadRequest reads from a body holding only that message (its
// format told from it alone), without building that body — cheaper for a
// reader that describes messages one at a time (the cache analysis names
// the message where each call's reuse broke). ok is false when that body
// would not read as exactly one message.
func ReadMessage(data []byte) (m Message, ok bool) {
	if o := object(bytes.TrimSpace(data)); o != nil {
		if c := o["content"]; len(c) == 0 || c[0] != '[' {
			// no content blocks, so nothing only Anthropic has
			// (looksAnthropic): Chat Completions, as chatRequest reads it
			return chatMessage(o), true
		}
	}
	body := make([]byte, 0, len(data)+16)
	body = append(append(append(body, `{"messages":[`...), data...), "]}"...)
	req, err := ReadRequest(body, "")
	if err != nil || len(req.Messages) != 1 {
		return Message{}, false
	}
	return req.Messages[0], true
}
