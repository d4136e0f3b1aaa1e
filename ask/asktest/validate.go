package asktest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The checks below are written from the APIs' documentation of a valid
// request (and the error messages they answer an invalid one with), not
// from what inspect writes: a body ask sends must pass the check of the
// API it is sent to.

// nameRE is the documented pattern of a tool (function) name, in the
// Anthropic and OpenAI APIs alike.
var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// toolUseIDRE is Anthropic's pattern of a tool_use id.
var toolUseIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// strictObject decodes body as one JSON object, its members raw.
func strictObject(body []byte) (map[string]json.RawMessage, error) {
	var o map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&o); err != nil {
		return nil, fmt.Errorf("body is not valid JSON: %v", err)
	}
	if o == nil {
		return nil, fmt.Errorf("body is not a JSON object")
	}
	if dec.More() {
		return nil, fmt.Errorf("body is not valid JSON: data after the object")
	}
	return o, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// ValidateAnthropic checks what the Anthropic Messages API documents of a
// request: model and max_tokens (an integer ≥ 1) are required; messages is
// a non-empty array whose first message is a user message and whose roles
// (user, assistant) alternate; content is a non-empty string or a
// non-empty array of blocks, text blocks non-empty; a tool_use has an id
// of [a-zA-Z0-9_-], unique, a name and an object input, and the next
// message is a user message holding a tool_result for each of its ids,
// the tool_result blocks first; a tool_result answers a tool_use of the
// message just before it; a request with tool_use or tool_result blocks
// must define tools; each tool has a valid name and an input_schema
// object; tool_choice only with tools, of type auto, any, tool (naming a
// tool) or none; with thinking on, budget_tokens is at least 1024 and
// below max_tokens, tool_choice is auto or none, and the last assistant
// turn, when it uses a tool, starts with its thinking block. Fields of
// other APIs (tool_calls messages, "tool" roles, "input") are refused.
func ValidateAnthropic(body []byte) error {
	o, err := strictObject(body)
	if err != nil {
		return err
	}
	for _, k := range []string{"input", "instructions", "stream_options", "max_output_tokens", "max_completion_tokens"} {
		if _, ok := o[k]; ok {
			return fmt.Errorf("%s: Extra inputs are not permitted", k)
		}
	}
	var model string
	if json.Unmarshal(o["model"], &model) != nil || model == "" {
		return fmt.Errorf("model: Field required")
	}
	var maxTokens int64
	if isNull(o["max_tokens"]) {
		return fmt.Errorf("max_tokens: Field required")
	}
	if json.Unmarshal(o["max_tokens"], &maxTokens) != nil || maxTokens < 1 {
		return fmt.Errorf("max_tokens: Input should be an integer greater than or equal to 1")
	}
	if raw, ok := o["stream"]; ok {
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return fmt.Errorf("stream: Input should be a valid boolean")
		}
	}
	if raw, ok := o["system"]; ok && !isNull(raw) {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			var blocks []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(raw, &blocks) != nil {
				return fmt.Errorf("system: Input should be a valid string or a list of text blocks")
			}
			for i, b := range blocks {
				if b.Type != "text" || b.Text == "" {
					return fmt.Errorf("system.%d: text content blocks must be non-empty", i)
				}
			}
		}
	}
	// Tools.
	var tools []map[string]json.RawMessage
	if raw, ok := o["tools"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &tools) != nil {
			return fmt.Errorf("tools: Input should be a valid list")
		}
	}
	toolNames := map[string]bool{}
	for i, t := range tools {
		var name, typ string
		_ = json.Unmarshal(t["name"], &name)
		_ = json.Unmarshal(t["type"], &typ)
		if typ != "" && typ != "custom" {
			if name == "" {
				return fmt.Errorf("tools.%d: a server tool needs a name", i)
			}
			toolNames[name] = true
			continue // a server tool (web_search_…): its own fields
		}
		if !nameRE.MatchString(name) {
			return fmt.Errorf("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if toolNames[name] {
			return fmt.Errorf("tools: Tool names must be unique (%s)", name)
		}
		toolNames[name] = true
		var schema map[string]json.RawMessage
		if json.Unmarshal(t["input_schema"], &schema) != nil || schema == nil {
			return fmt.Errorf("tools.%d.input_schema: Field required (a JSON Schema object)", i)
		}
		var st string
		if json.Unmarshal(schema["type"], &st) != nil || st != "object" {
			return fmt.Errorf("tools.%d.input_schema.type: Input should be 'object'", i)
		}
	}
	var choice struct {
		Type string `json:"type"`
		Name string `json:"name"`
	}
	hasChoice := !isNull(o["tool_choice"])
	if hasChoice {
		if len(tools) == 0 {
			return fmt.Errorf("tool_choice: tool_choice may only be specified while providing tools")
		}
		if json.Unmarshal(o["tool_choice"], &choice) != nil {
			return fmt.Errorf("tool_choice: Input should be an object")
		}
		switch choice.Type {
		case "auto", "any", "none":
		case "tool":
			if !toolNames[choice.Name] {
				return fmt.Errorf("tool_choice.name: no tool named %q", choice.Name)
			}
		default:
			return fmt.Errorf("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
		}
	}
	var thinking struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	}
	thinkingOn := false
	if raw, ok := o["thinking"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &thinking) != nil {
			return fmt.Errorf("thinking: Input should be an object")
		}
		switch thinking.Type {
		case "enabled":
			thinkingOn = true
			if thinking.BudgetTokens < 1024 {
				return fmt.Errorf("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
			}
			if thinking.BudgetTokens >= maxTokens {
				return fmt.Errorf("`max_tokens` must be greater than `thinking.budget_tokens`")
			}
		case "adaptive":
			thinkingOn = true
		case "disabled":
		default:
			return fmt.Errorf("thinking.type: Input should be 'enabled', 'adaptive' or 'disabled'")
		}
		if thinkingOn && hasChoice && choice.Type != "auto" && choice.Type != "none" {
			return fmt.Errorf("Thinking may not be enabled when tool_choice forces tool use.")
		}
	}
	if raw, ok := o["context_management"]; ok && !isNull(raw) {
		var cm struct {
			Edits []struct {
				Type string `json:"type"`
			} `json:"edits"`
		}
		if json.Unmarshal(raw, &cm) != nil {
			return fmt.Errorf("context_management: Input should be an object")
		}
		for i, e := range cm.Edits {
			if strings.HasPrefix(e.Type, "clear_thinking") && !thinkingOn {
				return fmt.Errorf("context_management.edits.%d: the clear_thinking strategy requires thinking to be enabled", i)
			}
		}
	}

	// Messages.
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(o["messages"], &msgs) != nil {
		return fmt.Errorf("messages: Field required")
	}
	if len(msgs) == 0 {
		return fmt.Errorf("messages: at least one message is required")
	}
	type block struct {
		Type      string          `json:"type"`
		Text      *string         `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		ToolUseID string          `json:"tool_use_id"`
		Thinking  *string         `json:"thinking"`
		Signature string          `json:"signature"`
	}
	usesTools := false
	ids := map[string]bool{}
	var pending []string // tool_use ids of the previous assistant message
	lastAssistant := -1
	lastUses, lastFirst := false, "" // the last assistant message's tool use and first block
	var fields []map[string]json.RawMessage
	_ = json.Unmarshal(o["messages"], &fields)
	prev := "" // the role of the last user or assistant message
	for i, m := range msgs {
		switch m.Role {
		case "user", "assistant":
		case "system":
			// Claude Code 2.1.3xx sends system messages between the turns
			// (its environment, reminders): text only, never first, never
			// between a tool_use and its results, and no part of the
			// alternation.
			var blocks []block
			var s string
			if i == 0 {
				return fmt.Errorf("messages: the first message must use the user role")
			}
			if len(pending) > 0 {
				return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(pending, ", "))
			}
			if json.Unmarshal(m.Content, &s) == nil {
				if s == "" {
					return fmt.Errorf("messages.%d: all messages must have non-empty content", i)
				}
				continue
			}
			if json.Unmarshal(m.Content, &blocks) != nil || len(blocks) == 0 {
				return fmt.Errorf("messages.%d.content: a system message is a string or text blocks", i)
			}
			for j, b := range blocks {
				if b.Type != "text" || b.Text == nil || *b.Text == "" {
					return fmt.Errorf("messages.%d.content.%d: a system message holds non-empty text blocks only", i, j)
				}
			}
			continue
		default:
			return fmt.Errorf("messages.%d.role: Input should be 'user', 'assistant' or 'system'", i)
		}
		for k := range fields[i] {
			if k != "role" && k != "content" {
				return fmt.Errorf("messages.%d.%s: Extra inputs are not permitted", i, k)
			}
		}
		if isNull(m.Content) {
			return fmt.Errorf("messages.%d.content: Field required", i)
		}
		if i == 0 && m.Role != "user" {
			return fmt.Errorf("messages: the first message must use the user role")
		}
		if prev == m.Role {
			return fmt.Errorf("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", m.Role)
		}
		prev = m.Role
		var blocks []block
		var s string
		switch {
		case json.Unmarshal(m.Content, &s) == nil:
			if s == "" && !(m.Role == "assistant" && i == len(msgs)-1) {
				return fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
			}
			if len(pending) > 0 {
				return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(pending, ", "))
			}
			if m.Role == "assistant" {
				lastAssistant, lastUses, lastFirst = i, false, "text"
			}
			continue
		case json.Unmarshal(m.Content, &blocks) == nil:
		default:
			return fmt.Errorf("messages.%d.content: Input should be a valid string or list of content blocks", i)
		}
		if len(blocks) == 0 && !(m.Role == "assistant" && i == len(msgs)-1) {
			return fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		answered := map[string]bool{}
		seenOther := false
		var uses []string
		for j, b := range blocks {
			at := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return fmt.Errorf("%s: text content blocks must be non-empty", at)
				}
				seenOther = true
			case "image", "document", "search_result":
				if m.Role != "user" {
					return fmt.Errorf("%s: %s blocks are for user messages", at, b.Type)
				}
				seenOther = true
			case "tool_result":
				usesTools = true
				if m.Role != "user" {
					return fmt.Errorf("%s: tool_result blocks are for user messages", at)
				}
				if seenOther {
					return fmt.Errorf("%s: tool_result blocks must come first in the content, before any text", at)
				}
				if !contains(pending, b.ToolUseID) || answered[b.ToolUseID] {
					return fmt.Errorf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", at, b.ToolUseID)
				}
				answered[b.ToolUseID] = true
			case "tool_use":
				usesTools = true
				if m.Role != "assistant" {
					return fmt.Errorf("%s: tool_use blocks are for assistant messages", at)
				}
				if !toolUseIDRE.MatchString(b.ID) {
					return fmt.Errorf("%s.id: String should match pattern '^[a-zA-Z0-9_-]+$'", at)
				}
				if ids[b.ID] {
					return fmt.Errorf("%s: `tool_use` ids must be unique (%s)", at, b.ID)
				}
				ids[b.ID] = true
				if b.Name == "" {
					return fmt.Errorf("%s.name: Field required", at)
				}
				var in map[string]json.RawMessage
				if json.Unmarshal(b.Input, &in) != nil || in == nil {
					return fmt.Errorf("%s.input: Input should be a valid dictionary", at)
				}
				uses = append(uses, b.ID)
			case "thinking":
				if m.Role != "assistant" || b.Thinking == nil {
					return fmt.Errorf("%s: a thinking block is an assistant's, with its thinking", at)
				}
				if b.Signature == "" {
					return fmt.Errorf("%s.signature: Field required", at)
				}
			case "redacted_thinking", "server_tool_use", "web_search_tool_result":
				if m.Role != "assistant" {
					return fmt.Errorf("%s: %s blocks are for assistant messages", at, b.Type)
				}
			default:
				return fmt.Errorf("%s.type: unknown content block type %q", at, b.Type)
			}
		}
		var missing []string
		for _, id := range pending {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		pending = uses
		if m.Role == "assistant" {
			lastAssistant = i
			lastUses = len(uses) > 0
			lastFirst = blocks[0].Type
		}
	}
	if thinkingOn && lastAssistant >= 0 && lastUses && lastFirst != "thinking" && lastFirst != "redacted_thinking" {
		return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block.", lastAssistant, lastFirst)
	}
	if len(pending) > 0 {
		return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(pending, ", "))
	}
	if thinkingOn && lastAssistant == len(msgs)-1 {
		return fmt.Errorf("messages: a final assistant message (prefill) cannot be used with thinking")
	}
	if usesTools && len(tools) == 0 {
		return fmt.Errorf("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	return nil
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// ValidateResponses checks what the OpenAI Responses API documents of a
// request: a model; input, a string or a list of items: messages (role
// user, assistant, system or developer; content a string or a list of
// parts, input_text for the user's and output_text for the assistant's),
// function_call items (call_id, name and arguments, a string) and
// function_call_output items (an output, answering a function_call
// earlier in the input: "No tool call found for function call output");
// every function_call answered by an output ("No tool output found for
// function call"); the first message a user (or system/developer) one;
// function tools with a valid name and parameters; tool_choice only with
// tools. Chat Completions' and Anthropic's fields (messages, max_tokens,
// stream_options, system) are refused as unsupported parameters.
func ValidateResponses(body []byte) error {
	o, err := strictObject(body)
	if err != nil {
		return err
	}
	for _, k := range []string{"messages", "max_tokens", "stream_options", "system", "max_completion_tokens"} {
		if _, ok := o[k]; ok {
			return fmt.Errorf("Unsupported parameter: '%s'", k)
		}
	}
	var model string
	if json.Unmarshal(o["model"], &model) != nil || model == "" {
		return fmt.Errorf("Missing required parameter: 'model'")
	}
	var tools []map[string]json.RawMessage
	if raw, ok := o["tools"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &tools) != nil {
			return fmt.Errorf("Invalid type for 'tools': expected an array")
		}
	}
	for i, t := range tools {
		var typ, name string
		_ = json.Unmarshal(t["type"], &typ)
		_ = json.Unmarshal(t["name"], &name)
		if typ != "function" {
			continue // a built-in tool
		}
		if !nameRE.MatchString(name) {
			return fmt.Errorf("Invalid 'tools[%d].name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'", i)
		}
		if _, ok := t["parameters"]; !ok {
			return fmt.Errorf("Missing required parameter: 'tools[%d].parameters'", i)
		}
		if !isNull(t["parameters"]) {
			var p map[string]json.RawMessage
			if json.Unmarshal(t["parameters"], &p) != nil || p == nil {
				return fmt.Errorf("Invalid type for 'tools[%d].parameters': expected an object", i)
			}
		}
		if raw, ok := t["strict"]; ok {
			var strict bool
			if json.Unmarshal(raw, &strict) != nil {
				return fmt.Errorf("Invalid type for 'tools[%d].strict': expected a boolean", i)
			}
		}
	}
	if !isNull(o["tool_choice"]) && len(tools) == 0 {
		return fmt.Errorf("Tool choice is only allowed when 'tools' are specified")
	}
	raw := o["input"]
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return fmt.Errorf("Missing required parameter: 'input'")
	}
	calls := map[string]bool{}  // function_call call_ids
	output := map[string]bool{} // answered ones
	var order []string
	first := true
	for i, it := range items {
		var typ, role, callID string
		_ = json.Unmarshal(it["type"], &typ)
		_ = json.Unmarshal(it["role"], &role)
		_ = json.Unmarshal(it["call_id"], &callID)
		if typ == "" && role != "" {
			typ = "message"
		}
		switch typ {
		case "message":
			switch role {
			case "user", "system", "developer":
			case "assistant":
				if first {
					return fmt.Errorf("input[%d]: the conversation starts with an assistant message, before any user message", i)
				}
			default:
				return fmt.Errorf("Invalid value for 'input[%d].role': expected one of 'user', 'assistant', 'system' or 'developer'", i)
			}
			if role == "user" {
				first = false
			}
			c := it["content"]
			var cs string
			if json.Unmarshal(c, &cs) == nil {
				continue
			}
			var parts []struct {
				Type string  `json:"type"`
				Text *string `json:"text"`
			}
			if json.Unmarshal(c, &parts) != nil {
				return fmt.Errorf("Invalid type for 'input[%d].content': expected a string or an array", i)
			}
			for j, p := range parts {
				want := "input_text"
				if role == "assistant" {
					want = "output_text"
				}
				if p.Type == "input_image" || p.Type == "input_file" || p.Type == "refusal" {
					continue
				}
				if p.Type != want || p.Text == nil {
					return fmt.Errorf("Invalid value for 'input[%d].content[%d].type': a %s message's text part is %s", i, j, role, want)
				}
			}
		case "function_call", "custom_tool_call":
			if first {
				return fmt.Errorf("input[%d]: the conversation starts with a tool call, before any user message", i)
			}
			var name string
			_ = json.Unmarshal(it["name"], &name)
			if callID == "" {
				return fmt.Errorf("Missing required parameter: 'input[%d].call_id'", i)
			}
			if name == "" {
				return fmt.Errorf("Missing required parameter: 'input[%d].name'", i)
			}
			if typ == "function_call" {
				var args string
				if json.Unmarshal(it["arguments"], &args) != nil {
					return fmt.Errorf("Missing required parameter: 'input[%d].arguments' (a string)", i)
				}
			}
			if calls[callID] {
				return fmt.Errorf("Duplicate item found with call_id %s", callID)
			}
			calls[callID] = true
			order = append(order, callID)
		case "function_call_output", "custom_tool_call_output":
			if !calls[callID] {
				return fmt.Errorf("No tool call found for function call output with call_id %s.", callID)
			}
			if _, ok := it["output"]; !ok {
				return fmt.Errorf("Missing required parameter: 'input[%d].output'", i)
			}
			output[callID] = true
		case "reasoning", "item_reference":
		default:
			return fmt.Errorf("Invalid value for 'input[%d].type': %q", i, typ)
		}
	}
	for _, id := range order {
		if !output[id] {
			return fmt.Errorf("No tool output found for function call %s.", id)
		}
	}
	return nil
}
