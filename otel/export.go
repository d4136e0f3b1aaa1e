package otel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/record"
)

// ScopeName is the instrumentation scope of the spans inspect exports.
const ScopeName = "github.com/inspect-dev/inspect"

// TraceID is the trace id a run is exported under: the first 16 bytes of
// the SHA-256 of its run id, so exporting a run again gives the same trace
// (and importing that trace again updates the same run).
func TraceID(runID string) trace.TraceID {
	sum := sha256.Sum256([]byte("inspect run " + runID))
	var id trace.TraceID
	copy(id[:], sum[:16])
	return id
}

// Bodies gives a model call's request and response bodies (nil when not
// recorded), for nodes read back from the store, where they are not filled.
type Bodies func(ctx context.Context, seq int64) (request, response []byte)

// Spanner turns a run's records into GenAI spans as they come: Node for
// each node once it is finished, in recording order, then Finish. One
// invoke_agent span per conversation (the trunk is the root; a branch's
// span is a child of its fork's), a chat span per llm node, execute_tool
// per tool node; a fork is an execute_tool span "fork" holding its
// branches; user turns, final answers, hand-offs and joins are spans with
// inspect.kind. GenAI attributes throughout, inspect.* for the rest.
// It is safe for concurrent use (branches finish nodes concurrently).
type Spanner struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	run    *record.Run
	bodies Bodies

	mu    sync.Mutex
	trunk *conversation
	convs map[convKey]*conversation
	forks map[int64]*forkSpan
}

type convKey struct {
	fork   int64
	branch string
}

type conversation struct {
	span    trace.Span
	ctx     context.Context
	lastEnd time.Time
	fork    int64
	agent   string // its first agent, once known
	err     string // the error of its last failed node
}

type forkSpan struct {
	span trace.Span
	ctx  context.Context
}

// DefaultService is the service.name of the traces inspect writes when
// Options.Service (OTEL_SERVICE_NAME) names none.
const DefaultService = "inspect"

// Options say how a run's spans are sent.
type Options struct {
	// Service is the resource's service.name (a backend searches traces
	// by it); "" = DefaultService.
	Service string
	// Sync sends every span as it ends (files, tests); otherwise spans
	// are batched (endpoints).
	Sync bool
	// Blocking makes a batched export wait for room in the queue instead
	// of dropping spans when it is full: for a run read back from the
	// store, whose spans come faster than any endpoint takes them (a live
	// run must not wait for its endpoint, so it does not block).
	Blocking bool
}

// NewSpanner starts exporting run through exporter: the trunk's span
// opens now (it ends at Finish).
func NewSpanner(ctx context.Context, run *record.Run, exporter sdktrace.SpanExporter, o Options, bodies Bodies) *Spanner {
	var opt sdktrace.TracerProviderOption
	switch {
	case o.Sync:
		opt = sdktrace.WithSyncer(exporter)
	case o.Blocking:
		opt = sdktrace.WithBatcher(exporter, sdktrace.WithBlocking())
	default:
		opt = sdktrace.WithBatcher(exporter)
	}
	service := o.Service
	if service == "" {
		service = DefaultService
	}
	res := resource.NewSchemaless(attribute.String("service.name", service), attribute.String("inspect.run.id", run.ID))
	tp := sdktrace.NewTracerProvider(opt, sdktrace.WithResource(res), sdktrace.WithIDGenerator(newIDs(run.ID)),
		sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{
			AttributeValueLengthLimit: -1, AttributeCountLimit: -1, EventCountLimit: -1, LinkCountLimit: -1,
			AttributePerEventCountLimit: -1, AttributePerLinkCountLimit: -1}))
	s := &Spanner{tp: tp, tracer: tp.Tracer(ScopeName), run: run, bodies: bodies, convs: map[convKey]*conversation{}, forks: map[int64]*forkSpan{}}
	agent := firstAgent(run)
	attrs := []attribute.KeyValue{
		attribute.String(AttrOperationName, "invoke_agent"),
		attribute.String(AttrConversationID, run.ID),
		attribute.String(AttrInspectRunID, run.ID),
		attribute.String(AttrInspectBranch, ""),
	}
	if agent != "" {
		attrs = append(attrs, attribute.String(AttrAgentName, agent))
	}
	if b, err := json.Marshal(run.Tasks); err == nil {
		attrs = append(attrs, attribute.String(AttrInspectTasks, string(b)))
	}
	if !run.Source.IsInspect() {
		attrs = append(attrs, attribute.String(AttrInspectSourceFormat, run.Source.Format))
		if run.Source.Version != "" {
			attrs = append(attrs, attribute.String(AttrInspectSourceVersion, run.Source.Version))
		}
	}
	if b, err := json.Marshal(run.Project); err == nil && (run.Project.Name != "" || len(run.Project.Files) > 0) {
		attrs = append(attrs, attribute.String(AttrInspectProject, string(b)))
	}
	cctx, span := s.tracer.Start(context.Background(), spanName("invoke_agent", agent), trace.WithTimestamp(run.Started),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	s.trunk = &conversation{span: span, ctx: cctx, lastEnd: run.Started, agent: agent}
	s.convs[convKey{}] = s.trunk
	return s
}

// firstAgent is the agent the run's trunk starts with, when the recorded
// project's agents.yaml names one (its first entry); "" otherwise.
func firstAgent(run *record.Run) string {
	f := run.Project.File("agents.yaml")
	if f == nil {
		return ""
	}
	for _, line := range strings.Split(f.Content, "\n") {
		t := strings.TrimSpace(line)
		if n, ok := strings.CutPrefix(t, "- name:"); ok {
			return strings.Trim(strings.TrimSpace(n), `"'`)
		}
	}
	return ""
}

func spanName(op, what string) string {
	if what == "" {
		return op
	}
	return op + " " + what
}

// conv returns the span of n's conversation, opening a branch's on its
// first node, below its fork's span.
func (s *Spanner) conv(n *record.Node) *conversation {
	k := convKey{n.ForkSeq, n.Branch}
	if c := s.convs[k]; c != nil {
		return c
	}
	parent := s.trunk.ctx
	if f := s.forks[n.ForkSeq]; f != nil {
		parent = f.ctx
	}
	cctx, span := s.tracer.Start(parent, spanName("invoke_agent", n.Agent), trace.WithTimestamp(n.Started),
		trace.WithAttributes(attribute.String(AttrOperationName, "invoke_agent"), attribute.String(AttrAgentName, n.Agent),
			attribute.String(AttrConversationID, s.run.ID+"/"+n.Branch), attribute.String(AttrInspectBranch, n.Branch)))
	c := &conversation{span: span, ctx: cctx, lastEnd: n.Started, fork: n.ForkSeq, agent: n.Agent}
	s.convs[k] = c
	return c
}

// Node exports one finished node.
func (s *Spanner) Node(ctx context.Context, n *record.Node) {
	var req, resp []byte
	if n.Kind == record.KindLLM && s.bodies != nil {
		req, resp = s.bodies(ctx, n.Seq)
	} else if n.Kind == record.KindLLM && n.LLM != nil {
		req, resp = n.LLM.Request, n.LLM.Response // live: the node carries them
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conv(n)
	if c.agent == "" && n.Agent != "" { // the trunk, when agents.yaml did not say
		c.agent = n.Agent
		c.span.SetName(spanName("invoke_agent", n.Agent))
		c.span.SetAttributes(attribute.String(AttrAgentName, n.Agent))
	}
	if n.Status.Failed() && n.Error != "" {
		c.err = n.Error
	}
	end := n.Ended
	if end.IsZero() {
		end = n.Started
	}
	if end.After(c.lastEnd) {
		c.lastEnd = end
	}
	attrs := []attribute.KeyValue{attribute.Int64(AttrInspectSeq, n.Seq), attribute.String(AttrInspectBranch, n.Branch),
		attribute.String(AttrAgentName, n.Agent), attribute.String(AttrInspectStatus, string(n.Status))}
	var name string
	switch n.Kind {
	case record.KindUser, record.KindFinal:
		name = string(n.Kind)
		attrs = append(attrs, attribute.String(AttrInspectKind, string(n.Kind)), attribute.String(AttrInspectText, n.Text))
	case record.KindLLM:
		name = spanName("chat", n.LLM.Model)
		attrs = append(attrs, llmAttrs(n, req, resp)...)
	case record.KindTool:
		name = spanName("execute_tool", n.Tool.Name)
		attrs = append(attrs, attribute.String(AttrOperationName, "execute_tool"), attribute.String(AttrToolName, n.Tool.Name),
			attribute.String(AttrToolType, "function"), attribute.String(AttrToolCallID, n.Tool.CallID),
			attribute.String(AttrToolCallArguments, n.Tool.Args), attribute.String(AttrToolCallResult, n.Tool.Result),
			attribute.Bool(AttrInspectResearch, n.Tool.Research))
	case record.KindHandoff:
		name = "execute_tool transfer_to_" + n.Handoff.To
		attrs = append(attrs, attribute.String(AttrInspectKind, "handoff"), attribute.String(AttrOperationName, "execute_tool"),
			attribute.String(AttrToolName, "transfer_to_"+n.Handoff.To), attribute.String(AttrInspectHandoffFrom, n.Handoff.From),
			attribute.String(AttrInspectHandoffTo, n.Handoff.To), attribute.String(AttrInspectReason, n.Handoff.Reason))
	case record.KindFork:
		tool := "fork"
		if n.Fork.Tool != "" {
			tool = n.Fork.Tool
		}
		var fb []map[string]string
		for _, b := range n.Fork.Branches {
			fb = append(fb, map[string]string{"name": b.Name, "agent": b.Agent, "instructions": b.Instructions})
		}
		bj, _ := json.Marshal(fb)
		attrs = append(attrs, attribute.String(AttrInspectKind, "fork"), attribute.String(AttrOperationName, "execute_tool"),
			attribute.String(AttrToolName, tool), attribute.String(AttrInspectContext, n.Fork.Context), attribute.String(AttrInspectBranches, string(bj)))
		fctx, span := s.tracer.Start(c.ctx, spanName("execute_tool", tool), trace.WithTimestamp(n.Started), trace.WithAttributes(attrs...))
		s.forks[n.Seq] = &forkSpan{span: span, ctx: fctx}
		return // ends at its join
	case record.KindJoin:
		s.join(n)
		var jb []map[string]any
		for _, b := range n.Join.Branches {
			jb = append(jb, map[string]any{"name": b.Name, "agent": b.Agent, "status": string(b.Status), "duration_ms": b.Duration.Milliseconds(), "answer": b.Answer})
		}
		bj, _ := json.Marshal(jb)
		name = "join"
		attrs = append(attrs, attribute.String(AttrInspectKind, "join"), attribute.Int64("inspect.join.fork", n.Join.ForkSeq), attribute.String(AttrInspectJoin, string(bj)))
	default:
		return
	}
	_, span := s.tracer.Start(c.ctx, name, trace.WithTimestamp(n.Started), trace.WithAttributes(attrs...))
	setStatus(span, n.Status, n.Error)
	span.End(trace.WithTimestamp(end))
}

// join ends the spans of a fork's branches (each at its last node) and the
// fork's span (at the join).
func (s *Spanner) join(n *record.Node) {
	var keys []convKey
	for k, c := range s.convs {
		if c.fork == n.Join.ForkSeq && k.fork == n.Join.ForkSeq {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].branch < keys[j].branch })
	status := map[string]record.JoinBranch{}
	for _, b := range n.Join.Branches {
		status[b.Name] = b
	}
	for _, k := range keys {
		c := s.convs[k]
		seg := k.branch[strings.LastIndexByte(k.branch, '/')+1:]
		if b, ok := status[seg]; ok {
			c.span.SetAttributes(attribute.String(AttrInspectStatus, string(b.Status)), attribute.String(AttrInspectAnswer, b.Answer))
			msg := c.err
			if msg == "" && b.Status.Failed() {
				msg = b.Answer
			}
			setStatus(c.span, b.Status, msg)
		}
		c.span.End(trace.WithTimestamp(c.lastEnd))
		delete(s.convs, k)
	}
	if f := s.forks[n.Join.ForkSeq]; f != nil {
		f.span.End(trace.WithTimestamp(n.Started))
		delete(s.forks, n.Join.ForkSeq)
	}
}

// Finish ends every open span (the trunk's last, at ended, with the run's
// status) and flushes the exporter.
func (s *Spanner) Finish(ctx context.Context, status record.Status, errMsg string, ended time.Time) error {
	s.mu.Lock()
	if ended.IsZero() {
		ended = s.trunk.lastEnd
	}
	var open []convKey
	for k := range s.convs {
		if k != (convKey{}) {
			open = append(open, k)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].branch < open[j].branch })
	for _, k := range open {
		c := s.convs[k]
		c.span.SetAttributes(attribute.String(AttrInspectStatus, string(status)))
		c.span.End(trace.WithTimestamp(c.lastEnd))
	}
	for seq, f := range s.forks {
		f.span.End(trace.WithTimestamp(ended))
		delete(s.forks, seq)
	}
	s.trunk.span.SetAttributes(attribute.String(AttrInspectStatus, string(status)))
	setStatus(s.trunk.span, status, errMsg)
	s.trunk.span.End(trace.WithTimestamp(ended))
	s.mu.Unlock()
	if err := s.tp.ForceFlush(ctx); err != nil {
		s.tp.Shutdown(ctx)
		return fmt.Errorf("export spans: %w", err)
	}
	if err := s.tp.Shutdown(ctx); err != nil {
		return fmt.Errorf("export spans: %w", err)
	}
	return nil
}

func setStatus(span trace.Span, st record.Status, msg string) {
	if st.Failed() {
		if msg == "" {
			msg = string(st)
		}
		span.SetStatus(codes.Error, msg)
	} else if st == record.StatusOK {
		span.SetStatus(codes.Ok, "")
	}
}

// llmAttrs are a chat span's GenAI attributes: model, usage, and the
// messages, system instructions and tool definitions read from the bodies.
func llmAttrs(n *record.Node, req, resp []byte) []attribute.KeyValue {
	l := n.LLM
	attrs := []attribute.KeyValue{attribute.String(AttrOperationName, "chat"), attribute.String(AttrProviderName, "openai"),
		attribute.String(AttrRequestModel, l.Model), attribute.Int64(AttrUsageInput, l.Usage.In), attribute.Int64(AttrUsageOutput, l.Usage.Out)}
	if l.Usage.CachedReported {
		attrs = append(attrs, attribute.Int64(AttrUsageCacheRead, l.Usage.Cached))
	}
	if l.Usage.CacheWriteReported {
		attrs = append(attrs, attribute.Int64(AttrUsageCacheCreation, l.Usage.CacheWrite))
	}
	if l.Usage.ReasoningReported {
		attrs = append(attrs, attribute.Int64(AttrUsageReasoning, l.Usage.Reasoning))
	}
	if r, err := chat.ReadRequest(req, ""); err == nil && req != nil {
		var in []genAIMessage
		for _, m := range r.Messages {
			if m.Role == "system" || m.Role == "developer" {
				continue
			}
			in = append(in, genAIMessageOf(m))
		}
		b, _ := json.Marshal(in)
		attrs = append(attrs, attribute.String(AttrInputMessages, string(b)))
		if r.System != "" {
			b, _ := json.Marshal([]map[string]string{{"type": "text", "content": r.System}})
			attrs = append(attrs, attribute.String(AttrSystemInstructions, string(b)))
		}
		if len(r.Tools) > 0 {
			var defs []map[string]any
			for _, t := range r.Tools {
				d := map[string]any{"type": "function", "name": t.Name, "description": t.Description}
				if len(t.Parameters) > 0 {
					d["parameters"] = t.Parameters
				}
				defs = append(defs, d)
			}
			b, _ := json.Marshal(defs)
			attrs = append(attrs, attribute.String(AttrToolDefinitions, string(b)))
		}
	}
	out := genAIMessage{Role: "assistant"}
	finish := "stop"
	if r, err := chat.ReadResponse(resp, ""); err == nil && resp != nil {
		out = genAIMessageOf(r.Message)
		out.Role = "assistant"
		if r.FinishReason != "" {
			finish = r.FinishReason
		}
		if r.Model != "" {
			attrs = append(attrs, attribute.String(AttrResponseModel, r.Model))
		}
	} else {
		if l.Content != "" {
			out.Parts = append(out.Parts, map[string]any{"type": "text", "content": l.Content})
		}
		for _, c := range l.Calls {
			out.Parts = append(out.Parts, map[string]any{"type": "tool_call", "name": c})
		}
	}
	if len(l.Calls) > 0 && finish == "stop" {
		finish = "tool_calls"
	}
	out.FinishReason = finish
	b, _ := json.Marshal([]genAIMessage{out})
	attrs = append(attrs, attribute.String(AttrOutputMessages, string(b)), attribute.StringSlice(AttrFinishReasons, []string{finish}))
	if !l.Exact() {
		attrs = append(attrs, attribute.String("inspect.request.fidelity", string(l.Fidelity)))
	}
	return attrs
}

// genAIMessage is one message of gen_ai.input.messages / output.messages.
type genAIMessage struct {
	Role         string           `json:"role"`
	Parts        []map[string]any `json:"parts"`
	FinishReason string           `json:"finish_reason,omitempty"`
}

func genAIMessageOf(m chat.Message) genAIMessage {
	g := genAIMessage{Role: m.Role, Parts: []map[string]any{}}
	if m.Role == "tool" {
		g.Parts = append(g.Parts, map[string]any{"type": "tool_call_response", "id": m.CallID, "response": m.Text})
		return g
	}
	if m.Text != "" {
		g.Parts = append(g.Parts, map[string]any{"type": "text", "content": m.Text})
	}
	for _, c := range m.Calls {
		g.Parts = append(g.Parts, map[string]any{"type": "tool_call", "id": c.ID, "name": c.Name, "arguments": c.Arguments})
	}
	return g
}

// ids derives span ids from the run id, so an export is the same every
// time; the trace id is TraceID.
type ids struct {
	mu    sync.Mutex
	trace trace.TraceID
	seed  [32]byte
	n     uint64
}

func newIDs(runID string) *ids {
	return &ids{trace: TraceID(runID), seed: sha256.Sum256([]byte("inspect spans " + runID))}
}

func (g *ids) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	return g.trace, g.NewSpanID(ctx, g.trace)
}

func (g *ids) NewSpanID(context.Context, trace.TraceID) trace.SpanID {
	g.mu.Lock()
	g.n++
	n := g.n
	g.mu.Unlock()
	var buf [40]byte
	copy(buf[:], g.seed[:])
	binary.BigEndian.PutUint64(buf[32:], n)
	sum := sha256.Sum256(buf[:])
	var id trace.SpanID
	copy(id[:], sum[:8])
	return id
}

// RunSource is what Export reads a recorded run from; *store.DB satisfies it.
type RunSource interface {
	LoadRun(ctx context.Context, id string) (*record.Run, error)
	ScanNodes(ctx context.Context, run *record.Run, fn func(*record.Node) error) error
	Request(ctx context.Context, run string, seq int64) ([]byte, error)
	Response(ctx context.Context, run string, seq int64) ([]byte, error)
}

// Export sends run id of src through exporter as one trace (TraceID(id)),
// as o says (a file: Sync; an endpoint: Blocking).
func Export(ctx context.Context, src RunSource, id string, exporter sdktrace.SpanExporter, o Options) error {
	run, err := src.LoadRun(ctx, id)
	if err != nil {
		return err
	}
	sp := NewSpanner(ctx, run, exporter, o, func(ctx context.Context, seq int64) ([]byte, []byte) {
		req, _ := src.Request(ctx, run.ID, seq)
		resp, _ := src.Response(ctx, run.ID, seq)
		return req, resp
	})
	if err := src.ScanNodes(ctx, run, func(n *record.Node) error {
		sp.Node(ctx, n)
		return nil
	}); err != nil {
		sp.Finish(ctx, run.Status, run.Error, run.Ended)
		return fmt.Errorf("read run %s: %w", id, err)
	}
	return sp.Finish(ctx, run.Status, run.Error, run.Ended)
}

// ExportRuns sends each run of ids through exporter as a trace of its
// own, in order, one run's spans in memory at a time, and shuts the
// exporter down after the last; done is told of each run sent. An error
// names the run it stopped at.
func ExportRuns(ctx context.Context, src RunSource, ids []string, exporter sdktrace.SpanExporter, o Options, done func(id string)) error {
	keep := keepOpen{exporter} // each run's provider shuts down its own, not this one
	for _, id := range ids {
		if err := Export(ctx, src, id, keep, o); err != nil {
			exporter.Shutdown(context.WithoutCancel(ctx))
			return fmt.Errorf("run %s: %w", id, err)
		}
		if done != nil {
			done(id)
		}
	}
	return exporter.Shutdown(ctx)
}

// keepOpen is an exporter whose Shutdown leaves it open.
type keepOpen struct{ sdktrace.SpanExporter }

func (keepOpen) Shutdown(context.Context) error { return nil }
