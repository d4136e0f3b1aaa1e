package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/cache/prefix"
	"github.com/inspect-dev/inspect/runtime/model"
	openai "github.com/sashabaranov/go-openai"
)

// Model is the scripted provider. Replies are consumed in order per branch
// path, whichever agent holds the conversation. It is safe for concurrent use.
type Model struct {
	script *Script

	mu    sync.Mutex
	next  map[string]int         // branch path -> index of its next reply
	tree  *prefix.Tree           // every request's prompt, interned
	prior map[string]*prefix.Set // model -> earlier requests the cache holds
	paths map[string]*interned   // branch path -> its last request's interned messages
	enc   encoder                // each conversation's encoded messages
}

// New returns a provider that answers from s.
func New(s *Script) *Model {
	return &Model{script: s, next: map[string]int{}, tree: prefix.NewTree(), prior: map[string]*prefix.Set{},
		paths: map[string]*interned{}, enc: encoder{convs: map[string]*encoded{}, frames: map[string]*framed{}}}
}

// BaseURL names the scripted provider in the run record.
func (m *Model) BaseURL() string { return "scripted:" + m.script.Name }

// Complete returns the conversation's next reply. A conversation without
// replies left, or an unusable reply, is a *model.CallError naming the line
// with Script set; an `error:` reply is one without it, as a provider's
// failure would be.
func (m *Model) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	enc, joined, err := m.enc.messages(req.Conversation, req.Body.Messages)
	var rest, tools []byte
	if err == nil {
		rest, tools, err = m.enc.frame(req.Conversation, req.Body)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	body, err := body(rest, req.Body.Messages != nil, joined)
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	reply, idx, err := m.take(req.Conversation)
	if err != nil {
		return nil, err
	}
	if req.Sent != nil {
		req.Sent(body)
	}
	where := fmt.Sprintf("%s:%d", m.script.Name, reply.Line)
	if reply.Problem != "" {
		return nil, &model.CallError{Script: true, Reason: fmt.Sprintf("%s: %s; fix that reply in the script", where, reply.Problem)}
	}
	if reply.Error != "" {
		return nil, &model.CallError{Status: reply.Status, Reason: fmt.Sprintf("scripted failure at %s", where), Latency: reply.Latency}
	}
	// only a request the provider answered enters the cache
	cached := m.cache(req.Body, tools, enc, req.Conversation, req.At, reply.Latency)

	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: reply.Say}
	key := convKey(req.Conversation)
	for i, c := range reply.Calls {
		msg.ToolCalls = append(msg.ToolCalls, openai.ToolCall{
			ID:       fmt.Sprintf("call_%s_%d_%d", key, idx+1, i+1),
			Type:     openai.ToolTypeFunction,
			Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args},
		})
	}
	out, _ := json.Marshal(msg)
	u := model.Usage{In: int64(len(body) / 4), Out: int64(len(out) / 4), Cached: cached, CachedReported: true}
	if reply.Usage != nil {
		if reply.Usage.In != nil {
			u.In = *reply.Usage.In
		}
		if reply.Usage.Out != nil {
			u.Out = *reply.Usage.Out
		}
		if reply.Usage.Cached != nil {
			u.Cached = *reply.Usage.Cached
		}
	}
	if u.Cached > u.In {
		u.Cached = u.In
	}
	finish := openai.FinishReasonStop
	if len(msg.ToolCalls) > 0 {
		finish = openai.FinishReasonToolCalls
	}
	resp := openai.ChatCompletionResponse{
		ID:      "scripted-" + strings.ReplaceAll(req.Turn, "#", "-"),
		Object:  "chat.completion",
		Model:   req.Body.Model,
		Choices: []openai.ChatCompletionChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage: openai.Usage{PromptTokens: int(u.In), CompletionTokens: int(u.Out), TotalTokens: int(u.In + u.Out),
			PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: int(u.Cached)}},
	}
	rb, _ := json.Marshal(resp)
	return &model.Response{Message: msg, Usage: u, Body: rb, Latency: reply.Latency, ToolLatency: reply.ToolLatency}, nil
}

// take hands out the next reply of the conversation at path.
func (m *Model) take(path string) (*Reply, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.script.Conversations[path]
	name := path
	if name == "" {
		name = TrunkKey
	}
	if c == nil {
		return nil, 0, &model.CallError{Script: true, Reason: fmt.Sprintf("%s:%d: conversations has no entry %q, so this conversation has no reply; add `%s:` with its replies",
			m.script.Name, m.script.convLine, name, name)}
	}
	i := m.next[path]
	if i >= len(c.Replies) {
		last := c.Line
		if len(c.Replies) > 0 {
			last = c.Replies[len(c.Replies)-1].Line
		}
		return nil, 0, &model.CallError{Script: true, Reason: fmt.Sprintf("%s:%d: conversation %q ran out of replies after %d (last at line %d); add the next reply there",
			m.script.Name, c.Line, name, len(c.Replies), last)}
	}
	m.next[path] = i + 1
	return c.Replies[i], i, nil
}

// cache simulates a provider prompt cache with the shared definition of
// package prefix: the longest prefix (tools, system prompt, messages) this
// request shares with an earlier request of the same model that had
// finished when this one starts, within prefix.DefaultLifetime, in
// prefix.Tokens. A request finishes at its start plus its latency, so
// sibling branches starting at the same virtual moment do not hit each
// other's prefixes, as they would not at a provider serving them
// concurrently; only answered requests enter it (failed and unusable ones
// never reach it). A request without a start time (zero at) sees every
// earlier one.
func (m *Model) cache(body openai.ChatCompletionRequest, tools []byte, enc [][]byte, conv string, at time.Time, latency time.Duration) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.prompt(conv, tools, body.Messages, enc)
	set := m.prior[body.Model]
	if set == nil {
		set = m.tree.NewSet()
		m.prior[body.Model] = set
	}
	best, _ := set.Longest(q, func(e *prefix.Entry) bool { return prefix.Reusable(e.Ready, at, prefix.DefaultLifetime) })
	set.Add(q, at.Add(latency), 0)
	return prefix.Tokens(best)
}

// prompt interns a request of conversation conv in the tree: the leading
// system message, then the other messages. Messages the conversation sent
// before (the same encoding, after the same ones) keep their node, so a
// call interns only what it adds.
func (m *Model) prompt(conv string, tools []byte, msgs []openai.ChatCompletionMessage, enc [][]byte) prefix.Prompt {
	var system []byte
	rest := enc
	if len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem {
		system, rest = enc[0], enc[1:]
	}
	prev := m.paths[conv]
	k := 0 // how many of prev's messages rest repeats (the same encodings)
	if prev != nil {
		for k < len(prev.enc) && k < len(rest) && len(prev.enc[k]) == len(rest[k]) && (len(rest[k]) == 0 || &prev.enc[k][0] == &rest[k][0]) {
			k++
		}
	}
	var path []prefix.Msg
	if prev != nil && k == len(prev.enc) {
		path = prev.path[:k] // it goes on from prev: append after it
	} else {
		path = make([]prefix.Msg, 0, len(rest)+16)
		if prev != nil {
			path = append(path, prev.path[:k]...)
		}
	}
	last := prefix.Root
	if k > 0 {
		last = path[k-1]
	}
	for _, e := range rest[k:] {
		last = m.tree.Message(last, e)
		path = append(path, last)
	}
	m.paths[conv] = &interned{enc: rest, path: path}
	return prefix.Prompt{Tools: m.tree.Part(tools), System: m.tree.Part(system), Last: last}
}

// interned is a conversation's last request as the tree holds it: the
// encoding of each message after the system prompt and its node.
type interned struct {
	enc  [][]byte
	path []prefix.Msg
}

// convKey turns a branch path into an id-safe word.
func convKey(path string) string {
	if path == "" {
		return TrunkKey
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, path)
}
