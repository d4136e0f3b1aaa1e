package ask

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/chat"
)

// A request recorded byte for byte in Anthropic Messages or OpenAI
// Responses is questioned as a Chat Completions one is (Question): its
// bytes are kept up to the end of its messages (input) array, the
// recorded turn, a result per call and the question are spliced after
// them in the same format, and only tool_choice and stream are set.

// native is a recorded Anthropic Messages or Responses body laid out for
// splicing.
type native struct {
	body  []byte
	f     chat.Format
	read  *chat.Request
	arr   span   // the messages (Anthropic) or input (Responses) array
	elems []span // its elements
}

// errNotSpliceable is why a recorded body cannot be spliced (a Responses
// input that is a string, a conversation that ends with the assistant):
// the request is then written anew.
var errNotSpliceable = errors.New("the recorded body cannot be extended in place")

func parseNative(body []byte, f chat.Format, read *chat.Request) (*native, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	key := "messages"
	if f == chat.OpenAIResponses {
		key = "input"
	}
	fl, ok := o.get(key)
	if !ok {
		return nil, errNotSpliceable
	}
	elems, err := parseArray(body, fl.val)
	if err != nil {
		return nil, errNotSpliceable
	}
	return &native{body: body, f: f, read: read, arr: fl.val, elems: elems}, nil
}

// appendElems splices elems (JSON values) after the array's last element.
func (n *native) appendElems(elems ...[]byte) []byte {
	var tail []byte
	for _, e := range elems {
		tail = append(append(tail, ','), e...)
	}
	at := n.arr.start + 1
	if len(n.elems) > 0 {
		at = n.elems[len(n.elems)-1].end
	} else if len(tail) > 0 {
		tail = tail[1:]
	}
	return splice(n.body, span{at, at}, tail)
}

// lastRole is the role of the array's last element that is not a system
// message (Claude Code sends those between the turns).
func (n *native) lastRole() string {
	for i := len(n.elems) - 1; i >= 0; i-- {
		var m struct {
			Role string `json:"role"`
			Type string `json:"type"`
		}
		s := n.elems[i]
		_ = json.Unmarshal(n.body[s.start:s.end], &m)
		if m.Role == "" && m.Type != "" && m.Type != "message" {
			return m.Type
		}
		if m.Role != "system" {
			return m.Role
		}
	}
	return ""
}

// questionAnthropic extends a recorded Messages body with the recorded
// response (its content blocks as received when respBody is a Messages
// response object: thinking blocks and their signatures included), a
// user turn of one tool_result per tool_use saying it was not run, and
// the question after them; tool_choice none (with tools) and stream true.
// notes say what else changed.
func questionAnthropic(n *native, respBody []byte, recorded *chat.Response, question string) (body []byte, notes []string, err error) {
	if r := n.lastRole(); r != "user" {
		return nil, nil, errNotSpliceable // a prefilled assistant turn: written anew
	}
	content, ids, raw := anthropicContent(respBody, recorded)
	var results []anthropicBlock
	for _, id := range ids {
		results = append(results, anthropicBlock{Type: "tool_result", ToolUseID: id, Content: NotRun})
	}
	results = append(results, anthropicBlock{Type: "text", Text: question})
	asst := append(append([]byte(`{"role":"assistant","content":`), content...), '}')
	user, err := marshal(anthropicMessage{Role: "user", Content: results})
	if err != nil {
		return nil, nil, err
	}
	body = n.appendElems(asst, user)
	if !raw && len(ids) > 0 && thinkingOn(n.body) {
		// The API wants a tool-using assistant turn of a thinking request
		// to start with its signed thinking block, which the recording
		// does not hold as received.
		if body, err = thinkingOff(body); err != nil {
			return nil, nil, err
		}
		notes = append(notes, "the recorded response's thinking blocks were not kept as received, so extended thinking is turned off for the question (the API refuses a tool-using turn without them), and with it context_management's thinking edits")
	}
	if len(n.read.Tools) > 0 {
		if body, err = setField(body, "tool_choice", []byte(`{"type":"none"}`)); err != nil {
			return nil, nil, err
		}
	}
	if body, err = setField(body, "stream", []byte("true")); err != nil {
		return nil, nil, err
	}
	return body, notes, nil
}

// anthropicContent is the assistant content of a recorded response as a
// JSON array: the content array of a Messages response object as
// received (raw), else blocks written from what chat read; ids are its
// tool_use ids in order.
func anthropicContent(respBody []byte, recorded *chat.Response) (content []byte, ids []string, raw bool) {
	if recorded.Format == chat.Anthropic {
		var r struct {
			Content []json.RawMessage `json:"content"`
		}
		if json.Unmarshal(respBody, &r) == nil && len(r.Content) > 0 {
			for _, b := range r.Content {
				var blk struct{ Type, ID string }
				_ = json.Unmarshal(b, &blk)
				if blk.Type == "tool_use" {
					ids = append(ids, blk.ID)
				}
			}
			c, err := json.Marshal(r.Content) // compacted, as sent back
			if err == nil {
				return c, ids, true
			}
			ids = nil
		}
	}
	var blocks []anthropicBlock
	if strings.TrimSpace(recorded.Message.Text) != "" {
		blocks = append(blocks, anthropicBlock{Type: "text", Text: recorded.Message.Text})
	}
	for i, call := range recorded.Message.Calls {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		id = anthropicID(id)
		args, _ := objectArgs(call.Arguments)
		blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: id, Name: call.Name, Input: json.RawMessage(args)})
		ids = append(ids, id)
	}
	if len(blocks) == 0 {
		blocks = append(blocks, anthropicBlock{Type: "text", Text: EmptyAssistant})
	}
	c, _ := marshal(blocks)
	return c, ids, false
}

// thinkingOff removes a Messages body's thinking, and the
// context_management edits that need it.
func thinkingOff(body []byte) ([]byte, error) {
	body, err := removeField(body, "thinking")
	if err != nil {
		return nil, err
	}
	return dropThinkingEdits(body)
}

// unsignedToolTurn reports whether a Messages body turns thinking on and
// its last assistant message uses a tool without starting with a thinking
// block: the API refuses it (a recording of a server that answered
// without thinking blocks is one).
func unsignedToolTurn(body []byte) bool {
	if !thinkingOn(body) {
		return false
	}
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &b) != nil {
		return false
	}
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if b.Messages[i].Role != "assistant" {
			continue
		}
		var blocks []struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(b.Messages[i].Content, &blocks) != nil || len(blocks) == 0 {
			return false
		}
		uses := false
		for _, bl := range blocks {
			uses = uses || bl.Type == "tool_use"
		}
		return uses && blocks[0].Type != "thinking" && blocks[0].Type != "redacted_thinking"
	}
	return false
}

// dropThinkingEdits removes from a Messages body's context_management the
// edits that clear thinking blocks (clear_thinking_*), which the API takes
// only with thinking on; context_management goes when no edit is left.
func dropThinkingEdits(body []byte) ([]byte, error) {
	var b struct {
		CM map[string]json.RawMessage `json:"context_management"`
	}
	if json.Unmarshal(body, &b) != nil || b.CM == nil {
		return body, nil
	}
	var edits []json.RawMessage
	if json.Unmarshal(b.CM["edits"], &edits) != nil {
		return body, nil
	}
	var keep []json.RawMessage
	for _, e := range edits {
		var t struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(e, &t)
		if !strings.HasPrefix(t.Type, "clear_thinking") {
			keep = append(keep, e)
		}
	}
	if len(keep) == len(edits) {
		return body, nil
	}
	if len(keep) == 0 && len(b.CM) == 1 {
		return removeField(body, "context_management")
	}
	b.CM["edits"], _ = json.Marshal(keep)
	cm, err := marshal(b.CM)
	if err != nil {
		return nil, err
	}
	return setField(body, "context_management", cm)
}

// thinkingOn reports whether a Messages body turns extended thinking on.
func thinkingOn(body []byte) bool {
	var b struct {
		Thinking *struct {
			Type string `json:"type"`
		} `json:"thinking"`
	}
	return json.Unmarshal(body, &b) == nil && b.Thinking != nil && b.Thinking.Type != "" && b.Thinking.Type != "disabled"
}

// questionResponses extends a recorded Responses body's input with the
// recorded response (its message and function_call items), one
// function_call_output per call saying it was not run, and the question
// as a user message; tool_choice none (with tools) and stream true.
func questionResponses(n *native, recorded *chat.Response, question string) ([]byte, error) {
	var items [][]byte
	add := func(it responsesItem) error {
		b, err := marshal(it)
		items = append(items, b)
		return err
	}
	rm := &recorded.Message
	if strings.TrimSpace(rm.Text) != "" {
		if err := add(responsesItem{Type: "message", Role: "assistant", Content: rm.Text}); err != nil {
			return nil, err
		}
	}
	var ids []string
	for i, call := range rm.Calls {
		id := call.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		ids = append(ids, id)
		args := call.Arguments
		if args == "" {
			args = "{}"
		}
		if err := add(responsesItem{Type: "function_call", CallID: id, Name: call.Name, Arguments: args}); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		out := NotRun
		if err := add(responsesItem{Type: "function_call_output", CallID: id, Output: &out}); err != nil {
			return nil, err
		}
	}
	if err := add(responsesItem{Type: "message", Role: "user", Content: question}); err != nil {
		return nil, err
	}
	body := n.appendElems(items...)
	var err error
	if len(n.read.Tools) > 0 {
		if body, err = setField(body, "tool_choice", []byte(`"none"`)); err != nil {
			return nil, err
		}
	}
	return setField(body, "stream", []byte("true"))
}

// site is a JSON string of a body that holds prompt text: where it is,
// and what to call it.
type site struct {
	where string
	role  string
	val   span
}

// promptSites are the strings of a recorded body that hold instructions,
// system text first: Anthropic's system (a string, or its text blocks),
// then the text of its user messages (Claude Code puts CLAUDE.md in the
// first); Responses' instructions, then its system and developer input
// messages, then its user ones.
func promptSites(body []byte, f chat.Format) []site {
	o, err := parseObject(body)
	if err != nil {
		return nil
	}
	var out []site
	strs := func(where, role string, s span) {
		b := body[s.start:s.end]
		switch {
		case len(b) > 0 && b[0] == '"':
			out = append(out, site{where: where, role: role, val: s})
		case len(b) > 0 && b[0] == '[':
			parts, err := parseArray(body, s)
			if err != nil {
				return
			}
			for j, ps := range parts {
				po, err := parseObject(body[ps.start:ps.end])
				if err != nil {
					continue
				}
				if t, ok := po.get("text"); ok && body[ps.start+t.val.start] == '"' {
					out = append(out, site{where: fmt.Sprintf("%s[%d]", where, j), role: role, val: span{ps.start + t.val.start, ps.start + t.val.end}})
				}
			}
		}
	}
	msgs := func(key string, roles ...string) {
		fl, ok := o.get(key)
		if !ok {
			return
		}
		elems, err := parseArray(body, fl.val)
		if err != nil {
			return
		}
		for i, es := range elems {
			mo, err := parseObject(body[es.start:es.end])
			if err != nil {
				continue
			}
			var role string
			if r, ok := mo.get("role"); ok {
				_ = json.Unmarshal(body[es.start+r.val.start:es.start+r.val.end], &role)
			}
			want := false
			for _, r := range roles {
				want = want || r == role
			}
			if c, ok := mo.get("content"); ok && want {
				strs(fmt.Sprintf("%s[%d].content", key, i), role, span{es.start + c.val.start, es.start + c.val.end})
			}
		}
	}
	switch f {
	case chat.Anthropic:
		if s, ok := o.get("system"); ok {
			strs("system", "system", s.val)
		}
		msgs("messages", "user")
	case chat.OpenAIResponses:
		if s, ok := o.get("instructions"); ok {
			strs("instructions", "system", s.val)
		}
		msgs("input", "system", "developer")
		msgs("input", "user")
	}
	return out
}

// replaceAt replaces old by new in the first site whose string holds it
// (or its trimmed form), keeping every other byte.
func replaceAt(body []byte, sites []site, old, new string) ([]byte, *PromptChange, error) {
	for _, s := range sites {
		var content string
		if json.Unmarshal(body[s.val.start:s.val.end], &content) != nil {
			continue
		}
		ch, replaced, ok := replaceText(content, old, new)
		if !ok {
			continue
		}
		ch.Where, ch.Role = s.where, s.role
		enc, err := encodeLike(replaced, body[s.val.start:s.val.end])
		if err != nil {
			return nil, nil, err
		}
		return splice(body, s.val, enc), ch, nil
	}
	return nil, nil, errors.New("no instructions of the recorded request contain the role-file text")
}

// replaceText replaces old by new in content, or their trimmed forms when
// old is only there trimmed.
func replaceText(content, old, new string) (*PromptChange, string, bool) {
	ch := &PromptChange{Old: old, New: new}
	if !strings.Contains(content, old) {
		ch.Old, ch.New, ch.Trimmed = strings.TrimSpace(old), strings.TrimSpace(new), true
		if ch.Old == "" || !strings.Contains(content, ch.Old) {
			return nil, "", false
		}
	}
	ch.Occurrences = strings.Count(content, ch.Old)
	return ch, strings.ReplaceAll(content, ch.Old, ch.New), true
}
