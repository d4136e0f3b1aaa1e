package otlp

import (
	"sort"
	"strings"
	"time"

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
	var spans []*otel.Span
	var ls []lone
	for _, t := range traces {
		if lonely(t) {
			spans = append(spans, t.spans[0])
			ls = append(ls, loneOf(t.spans[0]))
		}
	}
	js := joinLone(ls)
	if len(js) == 0 {
		return traces, nil, nil
	}
	joined := map[*otel.Span]*Trace{} // outermost span -> its joined trace
	inside := map[*otel.Span]bool{}   // spans joined into another's
	nested, doubled := map[string]int{}, map[string]int{}
	for _, j := range js {
		r := spans[j.root]
		t := NewTrace(r.TraceID)
		t.Add(r)
		for _, m := range j.members {
			c := *spans[m.i]
			c.TraceID, c.ParentID = r.TraceID, m.parent
			t.Add(&c)
			inside[spans[m.i]] = true
		}
		for _, d := range j.doubled {
			inside[spans[d]] = true
		}
		joined[r] = t
		nested[r.TraceID] = len(j.members)
		doubled[r.TraceID] = len(j.doubled)
	}
	out := make([]*Trace, 0, len(traces))
	for _, t := range traces {
		if !lonely(t) {
			out = append(out, t)
			continue
		}
		s := t.spans[0]
		if j := joined[s]; j != nil {
			out = append(out, j)
		} else if !inside[s] {
			out = append(out, t) // alone in its time
		}
	}
	return out, nested, doubled
}

// lone is what regroup reads of a lonely trace's span: its trace (the
// run's key) and span ids, times, service and scope, and for a chat span
// what twice compares. Small, so the stream's first pass can keep one a
// trace.
type lone struct {
	trace, span    string
	start, end     time.Time
	service, scope string
	chat           *chatOf
}

type chatOf struct {
	model, in, out string
	defs           bool // it has the tool definitions
}

func loneOf(s *otel.Span) lone {
	l := lone{trace: s.TraceID, span: s.SpanID, start: s.Start, end: s.End, service: s.Service, scope: s.Scope}
	if s.Attrs.Str(otel.AttrOperationName) == "chat" {
		l.chat = &chatOf{model: s.Attrs.Str("gen_ai.request.model"), in: s.Attrs.Str("gen_ai.usage.input_tokens"),
			out: s.Attrs.Str("gen_ai.usage.output_tokens"), defs: s.Attrs.Has("gen_ai.tool.definitions")}
	}
	return l
}

// join is one execution's one-span traces, to be joined, by their index
// in joinLone's input: its outermost span, the spans inside its time
// each with the span id it nests in, and the second records of model
// calls (twice), left out.
type join struct {
	root    int
	members []member
	doubled []int
}

type member struct {
	i      int
	parent string
}

// joinLone finds the executions among ls, the spans of lonely traces in
// the order their traces came: the joins of two spans or more.
func joinLone(ls []lone) []join {
	if len(ls) < 2 {
		return nil
	}
	// Outermost first: by start, the longer first on a tie.
	order := make([]int, len(ls))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool {
		a, b := &ls[order[i]], &ls[order[j]]
		if !a.start.Equal(b.start) {
			return a.start.Before(b.start)
		}
		return a.end.After(b.end)
	})
	within := func(s, p *lone) bool {
		return s.service == p.service && !s.start.Before(p.start) && !s.end.After(p.end)
	}
	// groups: an outermost span and the spans inside its time, in order.
	var roots []int
	members := map[int][]int{}
	for _, i := range order {
		if len(roots) > 0 && within(&ls[i], &ls[roots[len(roots)-1]]) {
			r := roots[len(roots)-1]
			members[r] = append(members[r], i)
			continue
		}
		roots = append(roots, i)
	}
	var js []join
	for _, r := range roots {
		ms := twice(ls, members[r])
		if len(ms) == 0 {
			continue
		}
		j := join{root: r}
		// Each member nests in the innermost earlier span whose time holds it.
		stack := []int{r}
		for _, i := range ms {
			for len(stack) > 1 && !within(&ls[i], &ls[stack[len(stack)-1]]) {
				stack = stack[:len(stack)-1]
			}
			j.members = append(j.members, member{i, ls[stack[len(stack)-1]].span})
			stack = append(stack, i)
		}
		if len(ms) < len(members[r]) {
			kept := map[int]bool{}
			for _, i := range ms {
				kept[i] = true
			}
			for _, i := range members[r] {
				if !kept[i] {
					j.doubled = append(j.doubled, i)
				}
			}
		}
		js = append(js, j)
	}
	return js
}

// twice drops the second record of a model call two instrumentations
// recorded (OpenLLMetry's LangChain and OpenAI instrumentations both write
// a chat span for one request): of two chat spans of different scopes,
// the same model and token counts, whose times overlap, the one without
// the tool definitions goes. ss are indexes in ls.
func twice(ls []lone, ss []int) []int {
	same := func(a, b *lone) bool {
		return a.scope != b.scope && a.chat.model == b.chat.model && a.chat.in == b.chat.in && a.chat.out == b.chat.out &&
			a.start.Before(b.end) && b.start.Before(a.end)
	}
	drop := map[int]bool{}
	for n, i := range ss {
		a := &ls[i]
		if a.chat == nil || drop[i] {
			continue
		}
		for _, k := range ss[n+1:] {
			b := &ls[k]
			if b.chat == nil || drop[k] || !same(a, b) {
				continue
			}
			if a.chat.defs && !b.chat.defs {
				drop[k] = true
			} else {
				drop[i] = true
			}
			break
		}
	}
	if len(drop) == 0 {
		return ss
	}
	out := ss[:0:0]
	for _, i := range ss {
		if !drop[i] {
			out = append(out, i)
		}
	}
	return out
}
