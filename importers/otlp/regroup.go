package otlp

import (
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/otel"
)

// Some instrumentations write every span as a trace of its own, with no
// parent: OpenLLMetry's LangChain instrumentation (@traceloop) under
// LangGraph gives each graph, chain, model call and tool call of one
// execution a new trace id, so one run read as dozens (the OpenAI
// instrumentation's chat spans too, a second record of each model call).
// Nothing in those
// spans names the execution (no thread or run id, no parent), so what is
// left to go by is the resource and time: regroup joins the one-span
// traces of one service that lie inside the time of one of them (the
// execution's outermost span) into one trace, and nests each span in the
// smallest one whose time holds it. That nesting is inferred, not
// recorded — concurrent steps whose times overlap may be nested wrongly —
// and the session's report says so.

// lonely reports whether t is one span with no parent, written by
// OpenLLMetry (its instrumentations' scopes are @traceloop/…, and they
// mark their spans with traceloop.span.kind or GenAI operations): the one
// instrumentation known to write an execution so. Other one-span traces
// are left alone — runs of their own.
func lonely(t *Trace) bool {
	if len(t.spans) != 1 {
		return false
	}
	s := t.spans[0]
	return s.ParentID == "" && !s.End.IsZero() && strings.HasPrefix(s.Scope, "@traceloop/")
}

// regroup returns traces with the one-span traces of one execution joined
// (see above), in the order their first trace came, how many spans each
// joined trace got its parent from times and how many model calls it had
// recorded twice (by the joined trace's id).
func regroup(traces []*Trace) ([]*Trace, map[string]int, map[string]int) {
	var lone []*otel.Span
	for _, t := range traces {
		if lonely(t) {
			lone = append(lone, t.spans[0])
		}
	}
	js, inside := joinLone(lone)
	if len(js) == 0 {
		return traces, nil, nil
	}
	joined := map[string]*Trace{} // outermost span id -> its joined trace
	nested, doubled := map[string]int{}, map[string]int{}
	for _, j := range js {
		t := j.trace()
		joined[j.root.SpanID] = t
		nested[j.root.TraceID] = len(j.members)
		doubled[j.root.TraceID] = len(j.doubled)
	}
	out := make([]*Trace, 0, len(traces))
	for _, t := range traces {
		if !lonely(t) {
			out = append(out, t)
			continue
		}
		s := t.spans[0]
		if j := joined[s.SpanID]; j != nil {
			out = append(out, j)
		} else if !inside[s.SpanID] {
			out = append(out, t) // alone in its time
		}
	}
	return out, nested, doubled
}

// join is one execution's one-span traces, to be joined: its outermost
// span, the spans inside its time each with the span it nests in, and
// the second records of model calls (twice), left out.
type join struct {
	root    *otel.Span
	members []member
	doubled []*otel.Span
}

type member struct {
	span   *otel.Span
	parent string // the span id it nests in
}

// trace is j's joined trace: its root, and each member a copy in the
// root's trace under its parent.
func (j join) trace() *Trace {
	t := NewTrace(j.root.TraceID)
	t.Add(j.root)
	for _, m := range j.members {
		c := *m.span
		c.TraceID, c.ParentID = j.root.TraceID, m.parent
		t.Add(&c)
	}
	return t
}

// joinLone finds the executions among lone, the spans of lonely traces
// in the order their traces came: the joins of two spans or more, and
// the span ids that went into one other than as its root.
func joinLone(lone []*otel.Span) ([]join, map[string]bool) {
	if len(lone) < 2 {
		return nil, nil
	}
	lone = append([]*otel.Span(nil), lone...)
	// Outermost first: by start, the longer first on a tie.
	sort.SliceStable(lone, func(i, j int) bool {
		if !lone[i].Start.Equal(lone[j].Start) {
			return lone[i].Start.Before(lone[j].Start)
		}
		return lone[i].End.After(lone[j].End)
	})
	within := func(s, p *otel.Span) bool {
		return s.Service == p.Service && !s.Start.Before(p.Start) && !s.End.After(p.End)
	}
	// groups: an outermost span and the spans inside its time.
	into := map[string]*otel.Span{} // span id -> its group's outermost span
	var roots []*otel.Span
	for _, s := range lone {
		if len(roots) > 0 && within(s, roots[len(roots)-1]) {
			into[s.SpanID] = roots[len(roots)-1]
			continue
		}
		roots = append(roots, s)
	}
	members := map[*otel.Span][]*otel.Span{}
	for _, s := range lone {
		if r := into[s.SpanID]; r != nil {
			members[r] = append(members[r], s)
		}
	}
	var js []join
	for _, r := range roots {
		ms := twice(members[r])
		if len(ms) == 0 {
			continue
		}
		j := join{root: r}
		// Each member nests in the innermost earlier span whose time holds it.
		stack := []*otel.Span{r}
		for _, s := range ms {
			for len(stack) > 1 && !within(s, stack[len(stack)-1]) {
				stack = stack[:len(stack)-1]
			}
			j.members = append(j.members, member{s, stack[len(stack)-1].SpanID})
			stack = append(stack, s)
		}
		kept := map[*otel.Span]bool{}
		for _, s := range ms {
			kept[s] = true
		}
		for _, s := range members[r] {
			if !kept[s] {
				j.doubled = append(j.doubled, s)
			}
		}
		js = append(js, j)
	}
	if len(js) == 0 {
		return nil, nil
	}
	inside := make(map[string]bool, len(into))
	for id := range into {
		inside[id] = true
	}
	return js, inside
}

// twice drops the second record of a model call two instrumentations
// recorded (OpenLLMetry's LangChain and OpenAI instrumentations both write
// a chat span for one request): of two chat spans of different scopes,
// the same model and token counts, whose times overlap, the one without
// the tool definitions goes.
func twice(ss []*otel.Span) []*otel.Span {
	isChat := func(s *otel.Span) bool { return s.Attrs.Str(otel.AttrOperationName) == "chat" }
	same := func(a, b *otel.Span) bool {
		return a.Scope != b.Scope && a.Attrs.Str("gen_ai.request.model") == b.Attrs.Str("gen_ai.request.model") &&
			a.Attrs.Str("gen_ai.usage.input_tokens") == b.Attrs.Str("gen_ai.usage.input_tokens") &&
			a.Attrs.Str("gen_ai.usage.output_tokens") == b.Attrs.Str("gen_ai.usage.output_tokens") &&
			a.Start.Before(b.End) && b.Start.Before(a.End)
	}
	drop := map[*otel.Span]bool{}
	for i, a := range ss {
		if !isChat(a) || drop[a] {
			continue
		}
		for _, b := range ss[i+1:] {
			if !isChat(b) || drop[b] || !same(a, b) {
				continue
			}
			if a.Attrs.Has("gen_ai.tool.definitions") && !b.Attrs.Has("gen_ai.tool.definitions") {
				drop[b] = true
			} else {
				drop[a] = true
			}
			break
		}
	}
	if len(drop) == 0 {
		return ss
	}
	out := ss[:0:0]
	for _, s := range ss {
		if !drop[s] {
			out = append(out, s)
		}
	}
	return out
}
