package otlp

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	jsoniter "github.com/json-iterator/go"

	body "github.com/inspect-dev/inspect/chat" // the test files use chat for a span's attributes
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
)

// fastJSON decodes the JSON that attributes carry (message lists, tool
// definitions): json-iterator, which pdata already parses OTLP/JSON with,
// in encoding/json's behaviour, at a fraction of its cost per model call.
var fastJSON = jsoniter.ConfigCompatibleWithStandardLibrary

// This file reads the three conventions of DESIGN §14 off one span: what
// the span is (class), the names, usage and messages it carries.

// class is what a span is to a run.
type class int

const (
	classOther   class = iota // a span with no meaning of its own: its children are read in its place
	classLLM                  // one model call
	classTool                 // one tool call
	classAgent                // an agent's turn: a conversation, or its owner for a while
	classInspect              // a span of inspect's own export carrying inspect.kind (user, final, handoff, fork, join)
)

// classify says what s is, from (in order) inspect's own attributes, the
// GenAI operation name, OpenInference's span kind, the AI SDK's operation
// id and LangGraph's node metadata.
func classify(s *otel.Span, hasLLMBelow bool) class {
	a := s.Attrs
	switch a.Str(otel.AttrInspectKind) {
	case "user", "final", "handoff", "join":
		return classInspect
	case "fork":
		return classTool // a fork is an execute_tool span holding its branches' agent spans
	}
	switch op := a.Str(otel.AttrOperationName); op {
	case "chat", "text_completion", "generate_content", "completion":
		return classLLM
	case "execute_tool":
		return classTool
	case "invoke_agent":
		return classAgent
	}
	switch strings.ToUpper(a.Str("openinference.span.kind")) {
	case "LLM":
		return classLLM
	case "TOOL":
		return classTool
	case "AGENT":
		return classAgent
	case "CHAIN":
		if langGraphNode(s) != "" && hasLLMBelow {
			return classAgent
		}
	}
	switch a.Str("ai.operationId") {
	case "ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate", "ai.streamObject.doStream":
		return classLLM
	case "ai.toolCall":
		return classTool
	case "ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject":
		return classAgent
	}
	if a.Has("graph.node.id") && hasLLMBelow {
		return classAgent
	}
	// older GenAI spans name no operation but a model and usage
	if a.Has("gen_ai.request.model") && (a.Has("gen_ai.usage.input_tokens") || a.Has("gen_ai.usage.prompt_tokens") || a.Has("gen_ai.prompt.0.role")) {
		return classLLM
	}
	return classOther
}

// langGraphNode is the LangGraph node a CHAIN span of OpenInference's
// LangChain instrumentation runs, when it is a node of the top-level graph
// (nodes of a subgraph, such as a prebuilt agent's "agent" and "tools",
// are its parts): metadata.langgraph_node equal to the span's name, a
// checkpoint namespace of one level, not __start__ or __end__.
func langGraphNode(s *otel.Span) string {
	md := s.Attrs.Str("metadata")
	if md == "" || !strings.Contains(md, "langgraph_node") {
		return ""
	}
	var m struct {
		Node string `json:"langgraph_node"`
		NS   string `json:"langgraph_checkpoint_ns"`
	}
	if fastJSON.Unmarshal([]byte(md), &m) != nil || m.Node != s.Name || strings.Contains(m.NS, "|") {
		return ""
	}
	if m.Node == "__start__" || m.Node == "__end__" {
		return ""
	}
	return m.Node
}

// agentName is the name of the agent an agent span runs. The model node
// of LangGraph's prebuilt react agent is called "agent" in every graph;
// when the graph it runs in has a name of its own (createReactAgent's
// name, the compiled graph's span), that name is the agent's.
func (b *builder) agentName(s *otel.Span) string {
	a := s.Attrs
	for _, k := range []string{otel.AttrAgentName, "agent.name", "graph.node.id", "ai.telemetry.functionId"} {
		if v := a.Str(k); v != "" {
			return v
		}
	}
	if n := langGraphNode(s); n != "" {
		if p := b.parent[s]; n == "agent" && p != nil && isNamedLangGraph(p) {
			return p.Name
		}
		return n
	}
	if n, ok := strings.CutPrefix(s.Name, "invoke_agent "); ok && n != "" {
		return n
	}
	if traceloopGraph(s) {
		if n := b.traceloopAgent(s); n != "" {
			return n
		}
	}
	if s.Name != "" && !strings.HasPrefix(s.Name, "ai.") {
		return s.Name
	}
	return ""
}

// mastraWorkflow reports whether s is a Mastra workflow run's span
// (gen_ai.operation.name invoke_workflow, mastra.span.type workflow_run):
// the workflow's name, and its input as the user gave it (a JSON object of
// one string: that string; another: its JSON; none or {}: "").
func mastraWorkflow(s *otel.Span) (name, input string, ok bool) {
	a := s.Attrs
	if a.Str(otel.AttrOperationName) != "invoke_workflow" && a.Str("mastra.span.type") != "workflow_run" {
		return "", "", false
	}
	name, _ = strings.CutPrefix(s.Name, "invoke_workflow ")
	if name == "" {
		name = "workflow"
	}
	raw := strings.TrimSpace(a.Str("mastra.workflow_run.input"))
	var obj map[string]json.RawMessage
	switch {
	case raw == "" || raw == "{}" || raw == "null":
	case fastJSON.Unmarshal([]byte(raw), &obj) == nil && len(obj) == 1:
		for _, v := range obj {
			var str string
			if fastJSON.Unmarshal(v, &str) == nil {
				input = str
			} else {
				input = raw
			}
		}
	default:
		input = raw
	}
	return name, input, true
}

// isNamedLangGraph reports whether s is the span of a whole LangGraph graph
// (OpenInference: a CHAIN of the langgraph integration that runs no node)
// named by its author, not LangGraph's default name.
func isNamedLangGraph(s *otel.Span) bool {
	if !strings.EqualFold(s.Attrs.Str("openinference.span.kind"), "CHAIN") || s.Name == "" || s.Name == "LangGraph" {
		return false
	}
	md := s.Attrs.Str("metadata")
	return strings.Contains(md, `"ls_integration":"langgraph"`) && !strings.Contains(md, "langgraph_node")
}

// modelOf is the model an LLM span called.
func modelOf(s *otel.Span) string {
	a := s.Attrs
	for _, k := range []string{otel.AttrResponseModel, otel.AttrRequestModel, "llm.model_name", "ai.response.model", "ai.model.id"} {
		if v := a.Str(k); v != "" {
			return v
		}
	}
	return ""
}

// usageOf reads token usage, normalised (DESIGN §6): In includes cache
// reads and writes. A source that counts them apart (Anthropic's
// instrumentations, or any whose cache counts exceed its input count) is
// added up; each count is Reported only when the span carries it.
func usageOf(s *otel.Span) record.Usage {
	a := s.Attrs
	first := func(keys ...string) (int64, bool) {
		for _, k := range keys {
			if n, ok := a.Int(k); ok {
				return n, true
			}
		}
		return 0, false
	}
	var u record.Usage
	u.In, _ = first(otel.AttrUsageInput, "gen_ai.usage.prompt_tokens", "llm.token_count.prompt", "ai.usage.inputTokens", "ai.usage.promptTokens")
	u.Out, _ = first(otel.AttrUsageOutput, "gen_ai.usage.completion_tokens", "llm.token_count.completion", "ai.usage.outputTokens", "ai.usage.completionTokens")
	u.Cached, u.CachedReported = first(otel.AttrUsageCacheRead, "gen_ai.usage.cache_read_input_tokens", "llm.token_count.prompt_details.cache_read", "ai.usage.inputTokenDetails.cacheReadTokens", "ai.usage.cachedInputTokens")
	u.CacheWrite, u.CacheWriteReported = first(otel.AttrUsageCacheCreation, "gen_ai.usage.cache_creation_input_tokens", "llm.token_count.prompt_details.cache_write", "ai.usage.inputTokenDetails.cacheWriteTokens")
	if !u.CachedReported || !u.CacheWriteReported {
		langChainCacheUsage(a, &u)
	}
	u.Reasoning, u.ReasoningReported = first(otel.AttrUsageReasoning, "gen_ai.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning", "ai.usage.outputTokenDetails.reasoningTokens", "ai.usage.reasoningTokens")
	provider := strings.ToLower(a.Str("gen_ai.provider.name") + " " + a.Str("gen_ai.system") + " " + a.Str("llm.provider") + " " + a.Str("llm.system"))
	if apart := u.Cached + u.CacheWrite; apart > 0 && !a.Has(otel.AttrInspectKind) && (strings.Contains(provider, "anthropic") || apart > u.In) {
		u.In += apart
	}
	u.Clamp()
	return u
}

// langChainCacheUsage fills the cache counts u lacks from the usage
// LangChain keeps on the message in an OpenInference LLM span's
// output.value (usage_metadata.input_token_details). OpenInference writes
// llm.token_count.prompt_details.cache_read only when it is not 0, so a
// provider's reported 0 — a prefix that was not reused — is found only there.
func langChainCacheUsage(a otel.Attrs, u *record.Usage) {
	out := a.Str("output.value")
	if !strings.Contains(out, `"input_token_details"`) || !strings.EqualFold(a.Str("openinference.span.kind"), "LLM") {
		return
	}
	type details struct {
		CacheRead     *int64 `json:"cache_read"`
		CacheCreation *int64 `json:"cache_creation"`
	}
	var v struct {
		Generations [][]struct {
			Message struct {
				Kwargs struct {
					Usage struct {
						Details details `json:"input_token_details"`
					} `json:"usage_metadata"`
				} `json:"kwargs"`
			} `json:"message"`
		} `json:"generations"`
	}
	if fastJSON.Unmarshal([]byte(out), &v) != nil || len(v.Generations) == 0 || len(v.Generations[0]) == 0 {
		return
	}
	d := v.Generations[0][len(v.Generations[0])-1].Message.Kwargs.Usage.Details
	if d.CacheRead != nil && !u.CachedReported {
		u.Cached, u.CachedReported = *d.CacheRead, true
	}
	if d.CacheCreation != nil && !u.CacheWriteReported {
		u.CacheWrite, u.CacheWriteReported = *d.CacheCreation, true
	}
}

// msg is one message of a model call, in any convention.
type msg struct {
	Role       string
	Content    string
	Name       string
	ToolCallID string
	Calls      []call
}

type call struct{ ID, Name, Args string }

// messages are what an LLM span says was sent (system instructions first)
// and received, and the tools it offered, in the first convention that has
// them.
type messages struct {
	In, Out []msg
	Tools   []toolDef
	Finish  string
}

func messagesOf(s *otel.Span) messages {
	a := s.Attrs
	var m messages
	// GenAI, current: JSON attributes, or the same keys on an event
	src := a
	if !a.Has(otel.AttrInputMessages) && !a.Has(otel.AttrOutputMessages) {
		for _, e := range s.Events {
			if e.Attrs.Has(otel.AttrInputMessages) || e.Attrs.Has(otel.AttrOutputMessages) {
				src = e.Attrs
				break
			}
		}
	}
	if src.Has(otel.AttrInputMessages) || src.Has(otel.AttrOutputMessages) {
		m.In = append(genAIParts(src.Str(otel.AttrSystemInstructions), "system"), genAIMessages(src.Str(otel.AttrInputMessages))...)
		m.Out = genAIMessages(src.Str(otel.AttrOutputMessages))
		m.Tools = toolDefs(src.Str(otel.AttrToolDefinitions))
		return m
	}
	// OpenInference: flattened llm.input_messages.N.message.*
	if in := flattened(a, "llm.input_messages."); len(in) > 0 || a.Has("llm.output_messages.0.message.role") {
		m.In, m.Out = in, flattened(a, "llm.output_messages.")
		for i := 0; ; i++ {
			v := a.Str("llm.tools." + strconv.Itoa(i) + ".tool.json_schema")
			if v == "" {
				break
			}
			m.Tools = append(m.Tools, toolDefs("["+v+"]")...)
		}
		m.Finish = a.Str("llm.finish_reason")
		return m
	}
	// the AI SDK: ai.prompt.messages, ai.response.*
	if a.Has("ai.prompt.messages") {
		m.In = aiSDKMessages(a.Str("ai.prompt.messages"))
		out := msg{Role: "assistant", Content: a.Str("ai.response.text")}
		var tcs []struct {
			ID    string          `json:"toolCallId"`
			Name  string          `json:"toolName"`
			Input json.RawMessage `json:"input"`
			Args  json.RawMessage `json:"args"`
		}
		if fastJSON.Unmarshal([]byte(a.Str("ai.response.toolCalls")), &tcs) == nil {
			for _, tc := range tcs {
				out.Calls = append(out.Calls, call{ID: tc.ID, Name: tc.Name, Args: argsText(first(tc.Input, tc.Args))})
			}
		}
		m.Out = []msg{out}
		for _, t := range a.Strings("ai.prompt.tools") {
			m.Tools = append(m.Tools, toolDefs("["+t+"]")...)
		}
		m.Finish = a.Str("ai.response.finishReason")
		return m
	}
	// GenAI, older: gen_ai.prompt.N.* / gen_ai.completion.N.* attributes
	if a.Has("gen_ai.prompt.0.role") || a.Has("gen_ai.completion.0.role") {
		m.In, m.Out = flatPrompt(a, "gen_ai.prompt."), flatPrompt(a, "gen_ai.completion.")
		return m
	}
	// GenAI, older: one event per message
	for _, e := range s.Events {
		ea := e.Attrs
		switch e.Name {
		case "gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message":
			role := strings.TrimSuffix(strings.TrimPrefix(e.Name, "gen_ai."), ".message")
			if r := ea.Str("role"); r != "" {
				role = r
			}
			mm := msg{Role: role, Content: contentText(ea["content"]), ToolCallID: ea.Str("id")}
			mm.Calls = eventCalls(ea["tool_calls"])
			m.In = append(m.In, mm)
		case "gen_ai.choice":
			mm := msg{Role: "assistant"}
			if body, ok := ea["message"].(map[string]any); ok {
				mm.Content = contentText(body["content"])
				mm.Calls = eventCalls(body["tool_calls"])
			} else {
				mm.Content = contentText(ea["content"])
			}
			m.Out = append(m.Out, mm)
			m.Finish = ea.Str("finish_reason")
		}
	}
	return m
}

func first(a, b json.RawMessage) json.RawMessage {
	if len(a) > 0 {
		return a
	}
	return b
}

// argsText is a tool call's arguments as JSON text: a JSON string's
// content, or the JSON of an object.
func argsText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : n-1]) // a plain JSON string: no escapes to undo
	}
	var s string
	if fastJSON.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// genAIMessages reads gen_ai.input.messages / gen_ai.output.messages:
// [{role, parts: [{type: text, content} | {type: tool_call, id, name,
// arguments} | {type: tool_call_response, id, response}], finish_reason}].
func genAIMessages(text string) []msg {
	type part struct {
		Type      string          `json:"type"`
		Content   json.RawMessage `json:"content"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Response  json.RawMessage `json:"response"`
		Result    json.RawMessage `json:"result"`
	}
	var raw []struct {
		Role  string `json:"role"`
		Name  string `json:"name"`
		Parts []part `json:"parts"`
	}
	if text == "" || fastJSON.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	var out []msg
	for _, r := range raw {
		m := msg{Role: r.Role, Name: r.Name}
		var results []msg
		for _, p := range r.Parts {
			switch p.Type {
			case "text", "":
				m.Content += argsText(p.Content)
			case "tool_call":
				m.Calls = append(m.Calls, call{ID: p.ID, Name: p.Name, Args: argsText(p.Arguments)})
			case "tool_call_response":
				results = append(results, msg{Role: "tool", ToolCallID: p.ID, Content: argsText(first(p.Response, p.Result))})
			}
		}
		if len(results) > 0 && m.Content == "" && len(m.Calls) == 0 {
			out = append(out, results...) // a tool-role message of responses: one tool message each
			continue
		}
		out = append(out, m)
		out = append(out, results...)
	}
	return out
}

// genAIParts reads gen_ai.system_instructions ([{type: text, content}]) as
// one message of role.
func genAIParts(text, role string) []msg {
	if text == "" {
		return nil
	}
	var parts []struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	if fastJSON.Unmarshal([]byte(text), &parts) != nil {
		return []msg{{Role: role, Content: text}} // a plain string
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			b.WriteString(p.Content)
		}
	}
	return []msg{{Role: role, Content: b.String()}}
}

// flattened reads OpenInference's llm.input_messages.N.message.* keys.
func flattened(a otel.Attrs, prefix string) []msg {
	var out []msg
	for i := 0; ; i++ {
		p := prefix + strconv.Itoa(i) + ".message."
		role := a.Str(p + "role")
		if role == "" && !a.Has(p+"content") && !a.Has(p+"contents.0.message_content.text") {
			break
		}
		m := msg{Role: role, Content: a.Str(p + "content"), Name: a.Str(p + "name"), ToolCallID: a.Str(p + "tool_call_id")}
		if m.Content == "" {
			for k := 0; ; k++ {
				cp := p + "contents." + strconv.Itoa(k) + ".message_content."
				if !a.Has(cp+"type") && !a.Has(cp+"text") {
					break
				}
				m.Content += a.Str(cp + "text")
			}
		}
		for j := 0; ; j++ {
			tp := p + "tool_calls." + strconv.Itoa(j) + ".tool_call."
			name := a.Str(tp + "function.name")
			if name == "" {
				break
			}
			m.Calls = append(m.Calls, call{ID: a.Str(tp + "id"), Name: name, Args: a.Str(tp + "function.arguments")})
		}
		out = append(out, m)
	}
	return out
}

// flatPrompt reads the older GenAI gen_ai.prompt.N.* keys (OpenLLMetry).
func flatPrompt(a otel.Attrs, prefix string) []msg {
	var out []msg
	for i := 0; ; i++ {
		p := prefix + strconv.Itoa(i) + "."
		if !a.Has(p+"role") && !a.Has(p+"content") {
			break
		}
		m := msg{Role: a.Str(p + "role"), Content: a.Str(p + "content"), ToolCallID: a.Str(p + "tool_call_id")}
		for j := 0; ; j++ {
			tp := p + "tool_calls." + strconv.Itoa(j) + "."
			name := a.Str(tp + "name")
			if name == "" {
				break
			}
			m.Calls = append(m.Calls, call{ID: a.Str(tp + "id"), Name: name, Args: a.Str(tp + "arguments")})
		}
		out = append(out, m)
	}
	return out
}

// aiSDKMessages reads the AI SDK's ai.prompt.messages.
func aiSDKMessages(text string) []msg {
	var raw []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if fastJSON.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	var out []msg
	for _, r := range raw {
		var s string
		if fastJSON.Unmarshal(r.Content, &s) == nil {
			out = append(out, msg{Role: r.Role, Content: s})
			continue
		}
		var parts []struct {
			Type   string          `json:"type"`
			Text   string          `json:"text"`
			ID     string          `json:"toolCallId"`
			Name   string          `json:"toolName"`
			Input  json.RawMessage `json:"input"`
			Args   json.RawMessage `json:"args"`
			Output json.RawMessage `json:"output"`
			Result json.RawMessage `json:"result"`
		}
		if fastJSON.Unmarshal(r.Content, &parts) != nil {
			continue
		}
		m := msg{Role: r.Role}
		for _, p := range parts {
			switch p.Type {
			case "text":
				m.Content += p.Text
			case "tool-call":
				m.Calls = append(m.Calls, call{ID: p.ID, Name: p.Name, Args: argsText(first(p.Input, p.Args))})
			case "tool-result":
				out = append(out, msg{Role: "tool", ToolCallID: p.ID, Name: p.Name, Content: aiSDKOutput(first(p.Output, p.Result))})
			}
		}
		if r.Role != "tool" {
			out = append(out, m)
		}
	}
	return out
}

// aiSDKOutput is a tool result's text: {type: text|json, value} as the
// SDK wraps it, or the value itself.
func aiSDKOutput(raw json.RawMessage) string {
	var o struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if fastJSON.Unmarshal(raw, &o) == nil && o.Type != "" && len(o.Value) > 0 {
		return argsText(o.Value)
	}
	return argsText(raw)
}

// toolDefs reads a JSON array of tool definitions in the shapes met:
// {type: function, function: {name, description, parameters}}, or the flat
// {type: function, name, description, parameters|inputSchema}.
func toolDefs(text string) []toolDef {
	var raw []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Function    *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if text == "" || fastJSON.Unmarshal([]byte(text), &raw) != nil {
		return nil
	}
	var out []toolDef
	for _, r := range raw {
		d := toolDef{Name: r.Name, Description: r.Description, Params: first(r.Parameters, r.InputSchema)}
		if r.Function != nil {
			d = toolDef{Name: r.Function.Name, Description: r.Function.Description, Params: r.Function.Parameters}
		}
		if d.Name != "" {
			out = append(out, d)
		}
	}
	return out
}

// toolDef is one tool offered to the model.
type toolDef struct {
	Name, Description string
	Params            json.RawMessage // its JSON schema, or nil
}

func contentText(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case nil:
		return ""
	case []any:
		var b strings.Builder
		for _, p := range c {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func eventCalls(v any) []call {
	var out []call
	switch tc := v.(type) {
	case string:
		var list []map[string]any
		if fastJSON.Unmarshal([]byte(tc), &list) == nil {
			for _, m := range list {
				out = append(out, callOf(m))
			}
		}
	case []any:
		for _, x := range tc {
			if m, ok := x.(map[string]any); ok {
				out = append(out, callOf(m))
			}
		}
	}
	return out
}

func callOf(m map[string]any) call {
	c := call{}
	c.ID, _ = m["id"].(string)
	if f, ok := m["function"].(map[string]any); ok {
		c.Name, _ = f["name"].(string)
		c.Args = contentText(f["arguments"])
	} else {
		c.Name, _ = m["name"].(string)
		c.Args = contentText(m["arguments"])
	}
	return c
}

// request rebuilds the Chat Completions body of the messages visible to
// the model (DESIGN §6: reconstructed), or nil when the span recorded none,
// through chat's encoder in its Traced layout: {"model", "messages",
// "stream": false, "tools"}, each message as chat.AppendMessage writes it
// (an assistant message that only calls has no content).
func request(model string, m messages) []byte {
	if len(m.In) == 0 {
		return nil
	}
	in := make([]body.Message, len(m.In))
	for i, x := range m.In {
		in[i] = chatMessage(x)
	}
	tools := make([]body.Tool, len(m.Tools))
	for i, t := range m.Tools {
		tools[i] = body.Tool{Name: t.Name, Description: t.Description, Parameters: t.Params}
	}
	return body.EncodeRequest(model, in, tools, body.Traced)
}

// response rebuilds a Chat Completions response of the output message
// and usage, or nil when the span recorded no output.
func response(model string, m messages, u record.Usage) []byte {
	if len(m.Out) == 0 {
		return nil
	}
	return body.EncodeResponse(model, chatMessage(m.Out[len(m.Out)-1]), m.Finish, u, body.Traced)
}

// chatMessage is x as a Chat Completions message: LangChain's and
// Gemini's roles (human, ai, model) named as Chat Completions names them.
func chatMessage(x msg) body.Message {
	role := x.Role
	switch role {
	case "human":
		role = "user"
	case "ai", "model":
		role = "assistant"
	}
	m := body.Message{Role: role, Text: x.Content, Name: x.Name, CallID: x.ToolCallID}
	for _, c := range x.Calls {
		m.Calls = append(m.Calls, body.Call{ID: c.ID, Name: c.Name, Arguments: c.Args})
	}
	return m
}

// toolOf reads a tool span: name, call id, arguments and result.
func toolOf(s *otel.Span) (name, id, args, result string) {
	a := s.Attrs
	pick := func(keys ...string) string {
		for _, k := range keys {
			if v := a.Str(k); v != "" {
				return v
			}
		}
		return ""
	}
	name = pick(otel.AttrToolName, "tool.name", "ai.toolCall.name")
	if name == "" {
		name, _ = strings.CutPrefix(s.Name, "execute_tool ")
	}
	id = pick(otel.AttrToolCallID, "tool_call.id", "tool.call_id", "ai.toolCall.id")
	args = pick(otel.AttrToolCallArguments, "tool.parameters", "input.value", "ai.toolCall.args", "ai.toolCall.input")
	result = pick(otel.AttrToolCallResult, "output.value", "ai.toolCall.result", "ai.toolCall.output")
	if args == "" && result == "" && a.Has("traceloop.entity.input") {
		// OpenLLMetry's LangChain instrumentation: the tool's input and
		// output as LangChain serialises them; the span names the tool's
		// class, the message it returned names the tool.
		var in struct {
			Args []json.RawMessage `json:"args"`
		}
		if fastJSON.Unmarshal([]byte(a.Str("traceloop.entity.input")), &in) == nil && len(in.Args) > 0 {
			args = argsText(in.Args[0])
		}
		if text, callID, tool, ok := traceloopToolMessage(a.Str("traceloop.entity.output")); ok {
			result = text
			if id == "" {
				id = callID
			}
			if tool != "" && (name == "" || name == a.Str("traceloop.entity.name")) {
				name = tool
			}
		}
		return
	}
	if text, callID, ok := langChainToolMessage(result); ok {
		result = text
		if id == "" {
			id = callID
		}
	} else if len(result) > 1 && result[0] == '"' {
		var s string
		if fastJSON.Unmarshal([]byte(result), &s) == nil { // a JSON string: its text
			result = s
		}
	}
	return
}

// langChainToolMessage reads the serialised ToolMessage that OpenInference
// records as a LangChain tool's output.value: its content and call id.
func langChainToolMessage(v string) (content, callID string, ok bool) {
	if !strings.Contains(v, "ToolMessage") {
		return "", "", false
	}
	var m struct {
		Output struct {
			ID     []string `json:"id"`
			Kwargs struct {
				Content    json.RawMessage `json:"content"`
				ToolCallID string          `json:"tool_call_id"`
			} `json:"kwargs"`
		} `json:"output"`
	}
	if fastJSON.Unmarshal([]byte(v), &m) != nil || len(m.Output.ID) == 0 || m.Output.ID[len(m.Output.ID)-1] != "ToolMessage" {
		return "", "", false
	}
	return argsText(m.Output.Kwargs.Content), m.Output.Kwargs.ToolCallID, true
}

// traceloopToolMessage reads the ToolMessage a LangChain tool returned as
// OpenLLMetry records it (traceloop.entity.output): the message itself, or
// a LangGraph Command whose update holds it (a hand-off tool's); its
// content, call id and tool name.
func traceloopToolMessage(v string) (content, callID, name string, ok bool) {
	if !strings.Contains(v, "ToolMessage") {
		return "", "", "", false
	}
	type msg struct {
		ID     []string `json:"id"`
		Kwargs struct {
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			Name       string          `json:"name"`
		} `json:"kwargs"`
	}
	var m struct {
		msg
		Update struct {
			Messages []msg `json:"messages"`
		} `json:"update"`
	}
	if fastJSON.Unmarshal([]byte(v), &m) != nil {
		return "", "", "", false
	}
	isTool := func(x msg) bool { return len(x.ID) > 0 && x.ID[len(x.ID)-1] == "ToolMessage" }
	found := m.msg
	if !isTool(found) {
		ok := false
		for _, x := range m.Update.Messages {
			if isTool(x) {
				found, ok = x, true
			}
		}
		if !ok {
			return "", "", "", false
		}
	}
	return argsText(found.Kwargs.Content), found.Kwargs.ToolCallID, found.Kwargs.Name, true
}

// traceloopGraph reports whether s is the span OpenLLMetry's LangChain
// instrumentation writes for a compiled LangGraph graph ("workflow
// CompiledStateGraph"): the whole graph, or the graph of an agent that a
// supervisor runs as one of its nodes. The span names no node or agent.
func traceloopGraph(s *otel.Span) bool {
	if !strings.HasPrefix(s.Scope, "@traceloop/") && !s.Attrs.Has("traceloop.span.kind") {
		return false
	}
	n := s.Attrs.Str("traceloop.workflow.name")
	if n == "" {
		n = strings.TrimPrefix(s.Name, "workflow ")
	}
	return n == "CompiledStateGraph" || n == "CompiledGraph"
}

// insideGraph reports whether an ancestor of s is an OpenLLMetry graph
// span: s is then a graph the outer one runs as a node (an agent).
func (b *builder) insideGraph(s *otel.Span) bool {
	seen := map[*otel.Span]bool{}
	for p := b.parent[s]; p != nil && !seen[p]; p = b.parent[p] {
		if traceloopGraph(p) {
			return true
		}
		seen[p] = true
	}
	return false
}

// traceloopAgent is the agent an OpenLLMetry graph span of a LangGraph
// node ran, from the messages it recorded, or "": the name on the
// AIMessages its output added to its input (langgraph-supervisor's agents
// name their messages so). An agent handing off ends with no output of
// its own: then the name on those the next agent's graph got beyond s's
// input, else on the message whose call returned a LangGraph Command below
// it (the hand-off tool's). A graph span of its own inside s is another
// agent's, not looked into.
func (b *builder) traceloopAgent(s *otel.Span) string {
	if n, ok := b.tlAgents[s]; ok {
		return n
	}
	in, _ := lcMessages(s.Attrs.Str("traceloop.entity.input"))
	added := func(state string) string {
		if out, ok := lcMessages(state); ok && len(out) > len(in) {
			for _, m := range out[len(in):] {
				if m.ai() && m.Kwargs.Name != "" {
					return m.Kwargs.Name
				}
			}
		}
		return ""
	}
	name := added(s.Attrs.Str("traceloop.entity.output"))
	if next := b.nextGraph(s); name == "" && next != nil && !s.Attrs.Has("traceloop.entity.output") {
		name = added(next.Attrs.Str("traceloop.entity.input"))
	}
	var find func(p *otel.Span) string
	find = func(p *otel.Span) string {
		for _, c := range b.kids[p.SpanID] {
			if traceloopGraph(c) {
				continue
			}
			if classify(c, false) == classTool {
				if _, from, ok := langGraphCommand(c.Attrs.Str("traceloop.entity.output")); ok && from != "" {
					return from
				}
				continue
			}
			if n := find(c); n != "" {
				return n
			}
		}
		return ""
	}
	if name == "" {
		name = find(s)
	}
	if b.tlAgents == nil {
		b.tlAgents = map[*otel.Span]string{}
	}
	b.tlAgents[s] = name
	return name
}

// nextGraph is the OpenLLMetry graph span that ran after s in the graph
// that holds s (the next agent's), or nil.
func (b *builder) nextGraph(s *otel.Span) *otel.Span {
	outer := b.parent[s]
	for outer != nil && !traceloopGraph(outer) {
		outer = b.parent[outer]
	}
	if outer == nil {
		return nil
	}
	var next *otel.Span
	var walk func(p *otel.Span)
	walk = func(p *otel.Span) {
		for _, c := range b.kids[p.SpanID] {
			switch {
			case !traceloopGraph(c):
				walk(c)
			case c != s && !c.Start.Before(s.End) && (next == nil || c.Start.Before(next.Start)):
				next = c
			}
		}
	}
	walk(outer)
	return next
}

// lcMessage is one message of a LangGraph state as LangChain serialises
// it ({"lc":1,"type":"constructor","id":[…,"AIMessage"],"kwargs":{…}}),
// or as the user gave it ({"role","content"}).
type lcMessage struct {
	ID     json.RawMessage `json:"id"`
	Kwargs struct {
		Name string `json:"name"`
	} `json:"kwargs"`
}

// ai reports whether m is an AIMessage (or a chunk of one).
func (m lcMessage) ai() bool {
	var id []string
	if fastJSON.Unmarshal(m.ID, &id) != nil || len(id) == 0 {
		return false
	}
	return id[len(id)-1] == "AIMessage" || id[len(id)-1] == "AIMessageChunk"
}

// lcMessages reads the messages of a LangGraph state ({"messages":[…]}).
func lcMessages(v string) ([]lcMessage, bool) {
	if !strings.Contains(v, `"messages"`) {
		return nil, false
	}
	var st struct {
		Messages []lcMessage `json:"messages"`
	}
	if fastJSON.Unmarshal([]byte(v), &st) != nil {
		return nil, false
	}
	return st.Messages, true
}

// langGraphCommand reads a LangGraph Command a tool returned, as
// OpenLLMetry records the tool's output ({"lg_name":"Command","update":
// {"messages":[…]},"goto":["research_expert"]}): the nodes it goes to (a
// Send's too), and the name on the last AIMessage of its update — the
// message that made the call.
func langGraphCommand(v string) (gotos []string, from string, ok bool) {
	if !strings.Contains(v, `"Command"`) {
		return nil, "", false
	}
	var c struct {
		Name   string `json:"lg_name"`
		Update struct {
			Messages []lcMessage `json:"messages"`
		} `json:"update"`
		Goto json.RawMessage `json:"goto"`
	}
	if fastJSON.Unmarshal([]byte(v), &c) != nil || c.Name != "Command" {
		return nil, "", false
	}
	var one string
	var many []json.RawMessage
	switch {
	case fastJSON.Unmarshal(c.Goto, &one) == nil && one != "":
		gotos = []string{one}
	case fastJSON.Unmarshal(c.Goto, &many) == nil:
		for _, g := range many {
			var send struct {
				Node string `json:"node"`
			}
			if fastJSON.Unmarshal(g, &one) == nil && one != "" {
				gotos = append(gotos, one)
			} else if fastJSON.Unmarshal(g, &send) == nil && send.Node != "" {
				gotos = append(gotos, send.Node)
			}
		}
	}
	for _, m := range c.Update.Messages {
		if m.ai() && m.Kwargs.Name != "" {
			from = m.Kwargs.Name
		}
	}
	return gotos, from, true
}

// sortedKeys returns m's keys sorted.
func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
