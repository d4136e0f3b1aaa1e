package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/model"
	"github.com/inspect-dev/inspect/runtime/project"
	"github.com/inspect-dev/inspect/runtime/tools"
	"github.com/inspect-dev/inspect/store"
	openai "github.com/sashabaranov/go-openai"
)

// runner is the state of one run shared by all its conversations.
type runner struct {
	cfg         Config
	p           *project.Project
	prov        model.Provider
	rec         *store.Recorder
	rctx        context.Context // for recording: survives cancellation of the run
	cancel      context.CancelCauseFunc
	ws          *tools.Workspace
	now         func() time.Time
	virtual     bool
	maxParallel int
	runID       string
	progress    *lockedWriter
	// red redacts every tool result and error before it is recorded and
	// sent back to the model (DESIGN §11, Secrets): the provider's key and
	// base URL password, and whatever internal/secret's rules find.
	red *secret.Redactor

	nodes, llmCalls atomic.Int64
	firstLLM        atomic.Int64 // seq of the first llm node
	modelsMu        sync.Mutex
	models          map[string]bool
}

// conversation is one message list driven by one current agent.
type conversation struct {
	path    string // branch path; "" for the trunk
	forkSeq int64  // the fork that opened it; 0 for the trunk
	depth   int
	session string
	agent   *project.Agent
	system  string
	tools   []openai.Tool
	offered map[string]bool // names in tools
	msgs    []openai.ChatCompletionMessage
	// wire is what the next request sends: the system prompt, then msgs.
	// Each call appends what msgs gained since (request), so a call costs
	// what it adds; an element once sent is never written again.
	wire  []openai.ChatCompletionMessage
	clock clock
	steps int // model calls in this turn
	calls int // model calls in the conversation, for turn ids

	toolLatency time.Duration // tool_latency of the current reply (scripted)
	// caller is the seq of the llm node whose tool calls are being run
	// (runCalls), the CalledBy of the nodes they become; 0 otherwise.
	caller int64
}

// clock is a conversation's time: virtual (scripted, exact) or the wall clock.
type clock interface {
	Now() time.Time
	// Advance moves virtual time on by d, or sleeps d on the wall clock.
	Advance(ctx context.Context, d time.Duration) error
	// Fork returns the clock a branch starts with.
	Fork() clock
}

type virtualClock struct{ t time.Time }

func (c *virtualClock) Now() time.Time { return c.t }
func (c *virtualClock) Advance(ctx context.Context, d time.Duration) error {
	if d > 0 {
		c.t = c.t.Add(d)
	}
	return ctx.Err()
}
func (c *virtualClock) Fork() clock { return &virtualClock{t: c.t} }

type wallClock struct{ now func() time.Time }

func (c *wallClock) Now() time.Time { return c.now() }
func (c *wallClock) Advance(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
func (c *wallClock) Fork() clock { return c }

func (r *runner) newClock(start time.Time) clock {
	if r.virtual {
		return &virtualClock{t: start}
	}
	return &wallClock{now: r.now}
}

// setAgent makes a the conversation's agent: its system prompt and fixed
// tool array from now on.
func (r *runner) setAgent(c *conversation, a *project.Agent) {
	c.agent = a
	c.system = systemPrompt(r.p, a, c.depth)
	c.tools = toolArray(r.p, a, c.depth)
	c.offered = map[string]bool{}
	for _, t := range c.tools {
		c.offered[t.Function.Name] = true
	}
	r.modelsMu.Lock()
	if r.models == nil {
		r.models = map[string]bool{}
	}
	r.models[a.Model] = true
	r.modelsMu.Unlock()
}

func (r *runner) usedModels() []string {
	r.modelsMu.Lock()
	defer r.modelsMu.Unlock()
	return sortedKeys(r.models)
}

// record writes a node; a database failure stops the run.
func (r *runner) add(c *conversation, n *record.Node) {
	r.fill(c, n)
	if err := r.rec.AddNode(r.rctx, n); err != nil {
		r.cancel(fmt.Errorf("record: %w", err))
		return
	}
	r.nodes.Add(1)
	r.observe(n)
}

// observe hands a durable node to the Observer, if any.
func (r *runner) observe(n *record.Node) {
	if r.cfg.Observer != nil {
		r.cfg.Observer.Node(r.rctx, n)
	}
}

func (r *runner) start(c *conversation, n *record.Node) {
	r.fill(c, n)
	if err := r.rec.StartNode(r.rctx, n); err != nil {
		r.cancel(fmt.Errorf("record: %w", err))
		return
	}
	r.nodes.Add(1)
}

func (r *runner) finish(n *record.Node) {
	if n.Seq == 0 {
		return // never started: the database already failed
	}
	if err := r.rec.FinishNode(r.rctx, n); err != nil {
		r.cancel(fmt.Errorf("record: %w", err))
		return
	}
	r.observe(n)
}

func (r *runner) fill(c *conversation, n *record.Node) {
	n.Branch, n.ForkSeq, n.Depth = c.path, c.forkSeq, c.depth
	switch n.Kind {
	case record.KindTool, record.KindFork, record.KindHandoff:
		n.CalledBy = c.caller
	}
	if n.Agent == "" {
		n.Agent = c.agent.Name
	}
	if n.Started.IsZero() {
		n.Started = c.clock.Now()
	}
}

// request returns the messages of the conversation's next request: its
// system prompt, then its messages. The slice grows with the conversation
// (a new system prompt, after a hand-off, starts a new one), and its
// elements are never written once sent: a provider may keep them and tell
// a repeated message by its address (model.Request.Body). Its capacity is
// its length, so a provider's append never writes into it.
func (c *conversation) request() []openai.ChatCompletionMessage {
	if len(c.wire) == 0 || len(c.wire) > len(c.msgs)+1 || c.wire[0].Content != c.system {
		c.wire = make([]openai.ChatCompletionMessage, 1, len(c.msgs)+16)
		c.wire[0] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: c.system}
	}
	c.wire = append(c.wire, c.msgs[len(c.wire)-1:]...)
	return c.wire[:len(c.wire):len(c.wire)]
}

// outcome is how a conversation (or a trunk turn) ended.
type outcome struct {
	answer string
	status record.Status
	err    string
	// script: it failed because of a problem in the script (a
	// *model.CallError with Script set), not because of a provider.
	script bool
	// httpStatus is the HTTP status of the model call that failed it, when
	// there was one.
	httpStatus int
}

// turn runs one user turn of the trunk.
func (r *runner) turn(ctx context.Context, c *conversation, task string) outcome {
	r.add(c, &record.Node{Kind: record.KindUser, Text: task})
	c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: task})
	c.steps = 0
	return r.converse(ctx, c)
}

// converse runs the agent loop until the conversation gives a final message
// or fails, and records its final node.
func (r *runner) converse(ctx context.Context, c *conversation) outcome {
	out := r.loop(ctx, c)
	if out.status == record.StatusError && ctx.Err() != nil {
		out.status, out.script = record.StatusCancelled, false
	}
	n := &record.Node{Kind: record.KindFinal, Text: out.answer, Status: out.status, Error: out.err}
	r.add(c, n)
	return out
}

func (r *runner) loop(ctx context.Context, c *conversation) outcome {
	for {
		if ctx.Err() != nil {
			return outcome{status: record.StatusCancelled, err: "cancelled before the conversation finished"}
		}
		if c.steps >= r.p.MaxSteps {
			return outcome{status: record.StatusExhausted, err: fmt.Sprintf("reached maxSteps (%d model calls) without a final answer; raise maxSteps in agents.yaml or narrow the task", r.p.MaxSteps)}
		}
		c.steps++
		c.calls++
		msg, seq, out, ok := r.step(ctx, c)
		if !ok {
			return out
		}
		if len(msg.ToolCalls) == 0 {
			return outcome{answer: msg.Content, status: record.StatusOK}
		}
		c.caller = seq
		ran := r.runCalls(ctx, c, msg)
		c.caller = 0
		if !ran {
			return outcome{status: record.StatusCancelled, err: "cancelled while running tools"}
		}
	}
}

// step makes one model call and records its llm node, whose seq it
// returns with the response.
func (r *runner) step(ctx context.Context, c *conversation) (openai.ChatCompletionMessage, int64, outcome, bool) {
	body := openai.ChatCompletionRequest{Model: c.agent.Model, Messages: c.request(), Tools: c.tools}
	n := &record.Node{Kind: record.KindLLM, LLM: &record.LLM{Model: c.agent.Model}}
	var once sync.Once
	begin := func(b []byte) {
		once.Do(func() {
			n.LLM.Request = b // the provider's, never changed afterwards (model.Request.Sent)
			r.start(c, n)
			r.firstLLM.CompareAndSwap(0, n.Seq)
		})
	}
	req := &model.Request{
		Session:      c.session,
		Conversation: c.path,
		Turn:         fmt.Sprintf("%s#%d", c.session, c.calls),
		Agent:        c.agent.Name,
		At:           c.clock.Now(),
		Body:         body,
		Sent:         begin,
		Retry: func(w model.RetryWait) {
			// never a silent wait: one line for each retry, and why
			asked := ""
			if w.RetryAfter > 0 {
				asked = fmt.Sprintf(" (Retry-After %s)", w.RetryAfter)
				if w.RetryAfter > w.Wait {
					asked = fmt.Sprintf(" (Retry-After asked %s; inspect waits at most %s)", w.RetryAfter, w.Wait)
				}
			}
			r.report(c, fmt.Sprintf("waits %s to retry%s: attempt %d of %d failed: %s", w.Wait, asked, w.Attempt, w.Attempts, strings.Join(strings.Fields(w.Reason), " ")))
		},
	}
	r.llmCalls.Add(1)
	resp, err := r.prov.Complete(ctx, req)
	if n.Seq == 0 {
		b, _ := json.Marshal(body) // the provider failed before sending
		begin(b)
	}
	if err != nil {
		var ce *model.CallError
		script, status := false, 0
		if errors.As(err, &ce) {
			c.clock.Advance(context.WithoutCancel(ctx), ce.Latency)
			script, status = ce.Script, ce.Status
			n.LLM.Attempts = ce.Attempts
			if len(ce.Body) > 0 {
				n.LLM.Response = ce.Body // what the provider sent back, to diagnose it
			}
		}
		n.Ended = c.clock.Now()
		n.Status, n.Error = record.StatusError, err.Error()
		if ctx.Err() != nil {
			n.Status, n.Error, script = record.StatusCancelled, "cancelled while waiting for the model", false
		}
		r.finish(n)
		r.report(c, "fails: "+n.Error)
		return openai.ChatCompletionMessage{}, n.Seq, outcome{status: n.Status, err: n.Error, script: script, httpStatus: status}, false
	}
	if err := c.clock.Advance(ctx, resp.Latency); err != nil {
		n.Ended, n.Status, n.Error = c.clock.Now(), record.StatusCancelled, "cancelled while waiting for the model"
		r.finish(n)
		return openai.ChatCompletionMessage{}, n.Seq, outcome{status: record.StatusCancelled, err: n.Error}, false
	}
	msg := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: resp.Message.Content}
	for _, tc := range resp.Message.ToolCalls {
		tc.Index = nil
		if tc.Type == "" {
			tc.Type = openai.ToolTypeFunction
		}
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	c.msgs = append(c.msgs, msg)
	c.toolLatency = resp.ToolLatency
	n.LLM.Content = msg.Content
	for _, tc := range msg.ToolCalls {
		n.LLM.Calls = append(n.LLM.Calls, tc.Function.Name)
	}
	n.LLM.Usage = record.Usage{In: resp.Usage.In, Out: resp.Usage.Out, Cached: resp.Usage.Cached, CachedReported: resp.Usage.CachedReported}
	if bad := n.LLM.Usage.Clamp(); len(bad) > 0 {
		// a provider's impossible numbers are recorded within bounds, and say so
		n.Error = fmt.Sprintf("the provider reported impossible usage (%s); recorded within 0..%d", strings.Join(bad, ", "), record.MaxTokens)
	}
	n.LLM.Response = resp.Body
	if n.LLM.Response == nil {
		n.LLM.Response = []byte{}
	}
	n.LLM.Attempts = resp.Attempts
	n.Ended = c.clock.Now()
	r.finish(n)
	if len(n.LLM.Calls) == 0 {
		r.report(c, "answers")
	} else {
		r.report(c, "calls "+strings.Join(n.LLM.Calls, ", "))
	}
	return msg, n.Seq, outcome{}, true
}

func (r *runner) report(c *conversation, what string) {
	if r.progress == nil {
		return
	}
	name := c.path
	if name == "" {
		name = "trunk"
	}
	r.progress.printf("%-14s %-12s step %-3d %s\n", name, c.agent.Name, c.steps, what)
}

// runCalls answers every tool call of an assistant message, in order. A
// hand-off takes effect after the last of them. It returns false when the
// run was cancelled meanwhile.
func (r *runner) runCalls(ctx context.Context, c *conversation, msg openai.ChatCompletionMessage) bool {
	assistant := len(c.msgs) - 1
	var handoffTo *project.Agent
	for _, tc := range msg.ToolCalls {
		name := tc.Function.Name
		var result string
		switch {
		case strings.HasPrefix(name, HandoffPrefix) && c.offered[name]:
			result = r.handoff(c, tc, &handoffTo)
		case name == ForkTool && c.offered[name]:
			result = r.fork(ctx, c, tc, assistant)
		default:
			result = r.tool(ctx, c, tc)
		}
		if result == "" {
			result = "(empty)"
		}
		c.msgs = append(c.msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: result})
	}
	if handoffTo != nil {
		r.setAgent(c, handoffTo)
	}
	return ctx.Err() == nil
}

// invalid records a tool node for a call the runtime refused and returns
// the message the model reads.
func (r *runner) invalid(c *conversation, tc openai.ToolCall, msg string) string {
	r.add(c, &record.Node{Kind: record.KindTool, Status: record.StatusError, Error: msg,
		Tool: &record.Tool{CallID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments, Result: msg}})
	return msg
}

func (r *runner) handoff(c *conversation, tc openai.ToolCall, to **project.Agent) string {
	target := r.p.Agent(strings.TrimPrefix(tc.Function.Name, HandoffPrefix))
	var a struct {
		Reason string `json:"reason"`
	}
	if s := strings.TrimSpace(tc.Function.Arguments); s != "" {
		if err := json.Unmarshal([]byte(s), &a); err != nil {
			return r.invalid(c, tc, fmt.Sprintf("error: the arguments of %s are not valid JSON (%v); send {\"reason\": \"...\"} or {}", tc.Function.Name, err))
		}
	}
	if *to != nil {
		return r.invalid(c, tc, fmt.Sprintf("error: this response already hands the conversation to %s; only one hand-off per response takes effect", (*to).Name))
	}
	*to = target
	r.add(c, &record.Node{Kind: record.KindHandoff, Handoff: &record.Handoff{From: c.agent.Name, To: target.Name, Reason: a.Reason}})
	r.report(c, "hands off to "+target.Name)
	return fmt.Sprintf("Transferred: %s holds the conversation from here and answers next.", target.Name)
}

// tool runs a built-in or command tool call, or refuses it, and records it.
func (r *runner) tool(ctx context.Context, c *conversation, tc openai.ToolCall) string {
	name, args := tc.Function.Name, tc.Function.Arguments
	if !c.offered[name] {
		return r.invalid(c, tc, r.unknownTool(c, name))
	}
	if s := strings.TrimSpace(args); s != "" && !json.Valid([]byte(s)) {
		return r.invalid(c, tc, fmt.Sprintf("error: the arguments of %s are not valid JSON; send one JSON object that matches its parameters", name))
	}
	ct := r.p.CommandTool(name)
	research := project.IsResearchBuiltin(name) || (ct != nil && ct.ReadOnly)
	n := &record.Node{Kind: record.KindTool, Tool: &record.Tool{CallID: tc.ID, Name: name, Args: args, Research: research}}
	r.start(c, n)
	var result string
	var err error
	if ct != nil {
		result, err = tools.RunCommand(ctx, r.p.Dir, ct, args)
	} else {
		result, err = r.ws.Call(ctx, name, args)
	}
	if aerr := c.clock.Advance(ctx, c.toolLatency); aerr != nil && err == nil {
		err = aerr
	}
	n.Ended = c.clock.Now()
	// One cap for every tool's result and error text (DESIGN §11, Bounds).
	limit := tools.DefaultMaxResult
	if ct != nil && ct.MaxResult > 0 {
		limit = ct.MaxResult
	}
	// Redacted before it is cut, so no part of a secret is left at the cut.
	result = r.red.String(result)
	result = tools.Truncate(result, int64(len(result)), limit)
	if err != nil {
		emsg := r.red.String(err.Error())
		msg := tools.Truncate(emsg, int64(len(emsg)), limit)
		result = "error: " + msg
		n.Status, n.Error = record.StatusError, msg
		if ctx.Err() != nil {
			n.Status = record.StatusCancelled
		}
	}
	n.Tool.Result = result
	r.finish(n)
	return result
}

func (r *runner) unknownTool(c *conversation, name string) string {
	var names []string
	for _, t := range c.tools {
		names = append(names, t.Function.Name)
	}
	sort.Strings(names)
	avail := "you have no tools; answer in words"
	if len(names) > 0 {
		avail = "the tools you have: " + strings.Join(names, ", ")
	}
	switch {
	case name == ForkTool && c.agent.Fork != nil:
		return fmt.Sprintf("error: fork is not available here: this conversation is at fork depth %d and maxForkDepth is %d, so do the work yourself; %s", c.depth, r.p.MaxForkDepth, avail)
	case strings.HasPrefix(name, HandoffPrefix):
		return fmt.Sprintf("error: %s is not a hand-off %s may make; %s", name, c.agent.Name, avail)
	}
	return fmt.Sprintf("error: unknown tool %q; %s", name, avail)
}
