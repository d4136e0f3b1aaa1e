package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/inspect-dev/inspect/runtime/model"
	openai "github.com/sashabaranov/go-openai"
)

// Model is the scripted provider. Replies are consumed in order per branch
// path, whichever agent holds the conversation. It is safe for concurrent use.
type Model struct {
	script *Script

	mu    sync.Mutex
	next  map[string]int     // branch path -> index of its next reply
	prior map[string]*prompt // model -> earlier requests the cache holds
	enc   encoder            // each conversation's encoded messages
}

// New returns a provider that answers from s.
func New(s *Script) *Model {
	return &Model{script: s, next: map[string]int{}, prior: map[string]*prompt{}, enc: encoder{convs: map[string]*encoded{}}}
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
	enc, err := m.enc.messages(req.Conversation, req.Body.Messages)
	m.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	body, err := body(req.Body, enc)
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
	cached := m.cache(req.Body, enc, req.At, reply.Latency)

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

// cache simulates a provider prompt cache: the longest byte prefix this
// request shares with an earlier request of the same model that had been
// processed before this one starts, counted in the order tools, system
// prompt, messages, divided by 4. A request becomes cacheable at its start
// plus its latency, so sibling branches starting at the same virtual moment
// do not hit each other's prefixes, as they would not at a provider serving
// them concurrently; only answered requests are recorded (failed and
// unusable ones never reach it). A request without a start time (zero at)
// sees every earlier one.
func (m *Model) cache(body openai.ChatCompletionRequest, enc [][]byte, at time.Time, latency time.Duration) int64 {
	key := cacheKey(body, enc)
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.prior[body.Model]
	if p == nil {
		p = newPrompt()
		m.prior[body.Model] = p
	}
	best := p.longest(key, at)
	p.add(key, at.Add(latency))
	return int64(best / 4)
}

// cacheEntry is a request the simulated prompt cache holds: its cache key,
// the moment it becomes cacheable (its start plus its latency), and its
// order of arrival (keys may repeat).
type cacheEntry struct {
	key   []byte
	ready time.Time
	n     int
}

// prompt is one model's simulated cache: its requests sorted by key. The
// longest prefix a query shares with any key is shared with its neighbour
// in that order, so a lookup walks out from the query's place to the first
// entry on each side that is ready at the query's start: O(log n) plus the
// entries still being processed, instead of a comparison with every earlier
// request.
type prompt struct {
	tree *btree.BTreeG[*cacheEntry]
	n    int
}

func newPrompt() *prompt {
	return &prompt{tree: btree.NewG(16, func(a, b *cacheEntry) bool {
		if c := bytes.Compare(a.key, b.key); c != 0 {
			return c < 0
		}
		return a.n < b.n
	})}
}

func (p *prompt) add(key []byte, ready time.Time) {
	p.n++
	p.tree.ReplaceOrInsert(&cacheEntry{key: key, ready: ready, n: p.n})
}

// longest returns the longest prefix key shares with an entry ready at at
// (every entry when at is zero).
func (p *prompt) longest(key []byte, at time.Time) int {
	ready := func(e *cacheEntry) bool { return at.IsZero() || !e.ready.After(at) }
	pivot := &cacheEntry{key: key}
	best := 0
	p.tree.DescendLessOrEqual(pivot, func(e *cacheEntry) bool {
		if !ready(e) {
			return true
		}
		best = commonPrefix(e.key, key)
		return false
	})
	p.tree.AscendGreaterOrEqual(pivot, func(e *cacheEntry) bool {
		if !ready(e) {
			return true
		}
		best = max(best, commonPrefix(e.key, key))
		return false
	})
	return best
}

// cacheKey is what the simulated cache compares: the tools, the system
// messages, then the other messages as a JSON array (enc holds each
// message's encoding).
func cacheKey(body openai.ChatCompletionRequest, enc [][]byte) []byte {
	tools, _ := json.Marshal(body.Tools)
	size := len(tools) + 2
	for _, e := range enc {
		size += len(e) + 1
	}
	b := append(make([]byte, 0, size), tools...)
	for i, msg := range body.Messages {
		if msg.Role == openai.ChatMessageRoleSystem {
			b = append(b, enc[i]...)
		}
	}
	n := 0
	b = append(b, '[')
	for i, msg := range body.Messages {
		if msg.Role != openai.ChatMessageRoleSystem {
			if n > 0 {
				b = append(b, ',')
			}
			b = append(b, enc[i]...)
			n++
		}
	}
	if n == 0 {
		return append(b[:len(b)-1], "null"...) // as json.Marshal of no messages
	}
	return append(b, ']')
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && bytes.Equal(a[i:i+64], b[i:i+64]) { // memeq a chunk at a time
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
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
