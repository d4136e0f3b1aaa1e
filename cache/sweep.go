package cache

import (
	"fmt"
	"slices"
	"time"

	"github.com/inspect-dev/inspect/cache/prefix"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store/layout"
)

// A sweep finds each analysed request's longest reusable prefix: the
// requests in start order, each model's prefix.Set holding those that had
// finished by then within the lifetime and were recorded before. What it
// needs of a request — its prompt, and its node's seq, times, status and
// model — the store's rows hold, so Read sweeps while the graph loads, and
// AnalyzeRequests takes that result when the graph's nodes say the same
// (else it sweeps again).

// sweepIn is one analysed request as a sweep sees it.
type sweepIn struct {
	seq            int64
	started, ended time.Time
	ready          bool // finished ok: reusable from its end on
	model          string
	p              prefix.Prompt
}

func (x sweepIn) same(y sweepIn) bool {
	return x.seq == y.seq && x.started.Equal(y.started) && x.ended.Equal(y.ended) && x.ready == y.ready && x.model == y.model && x.p == y.p
}

// sweepOut is one request's longest reusable prefix.
type sweepOut struct {
	reusable int
	found    bool
	match    int64     // the request it shares it with, when found
	ready    time.Time // when that one finished
	held     bool      // an earlier request of its model had been held (why it is cold)
}

// sweepOf sweeps in (in seq order), giving each one's prefix.
func sweepOf(t *prefix.Tree, in []sweepIn, lifetime time.Duration) []sweepOut {
	queries := make([]int, len(in))
	var ready []int
	for i, x := range in {
		queries[i] = i
		if x.ready {
			ready = append(ready, i)
		}
	}
	slices.SortStableFunc(queries, func(i, j int) int { return in[i].started.Compare(in[j].started) })
	slices.SortStableFunc(ready, func(i, j int) int { return in[i].ended.Compare(in[j].ended) })
	type model struct {
		set  *prefix.Set
		held bool
	}
	models := map[string]*model{}
	of := func(name string) *model {
		m := models[name]
		if m == nil {
			m = &model{set: t.NewSet()}
			models[name] = m
		}
		return m
	}
	type held struct {
		entry *prefix.Entry
		set   *prefix.Set
		ready time.Time
	}
	live := make([]held, 0, len(ready)) // in ready order
	next, first := 0, 0
	out := make([]sweepOut, len(in))
	for _, qi := range queries {
		q := &in[qi]
		at := q.started
		for next < len(ready) && !in[ready[next]].ended.After(at) {
			r := &in[ready[next]]
			m := of(r.model)
			live = append(live, held{m.set.Add(r.p, r.ended, r.seq), m.set, r.ended})
			m.held = true
			next++
		}
		for first < len(live) && !prefix.Reusable(live[first].ready, at, lifetime) {
			live[first].set.Remove(live[first].entry)
			live[first] = held{}
			first++
		}
		m := of(q.model)
		seq := q.seq
		n, e := m.set.Longest(q.p, func(e *prefix.Entry) bool {
			return e.ID < seq && prefix.Reusable(e.Ready, at, lifetime)
		})
		o := &out[qi]
		o.reusable, o.held = n, m.held
		if e != nil {
			o.found, o.match, o.ready = true, e.ID, e.Ready
		}
	}
	return out
}

// rowInputs are the requests of reqs the analysis compares and their
// sweep's inputs, as their rows say (the sweep of Read).
func (r *Requests) rowInputs(reqs []layout.RequestParts) []sweepIn {
	in := make([]sweepIn, 0, len(reqs))
	for _, rp := range reqs {
		p := r.prompts.get(rp.Seq)
		exact := rp.Fidelity == "" || rp.Fidelity == record.FidelityExact
		if p == nil || !p.ok && !exact {
			continue
		}
		in = append(in, sweepIn{seq: rp.Seq, started: rp.Started, ended: rp.Ended,
			ready: rp.Status == record.StatusOK && !rp.Ended.IsZero(), model: rp.Model, p: p.p})
	}
	return in
}

// sweep finds each analysed call's longest reusable prefix, taking Read's
// sweep when the graph's nodes gave it the same inputs.
func (a *analysis) sweep(calls []*Call, rep *Report) {
	lifetime := a.o.lifetime()
	var bySeq seqMap[*Call]
	bySeq.reserve(firstSeq(a.g), lastSeq(a.g))
	qs := make([]*Call, 0, len(calls))
	same := a.sweptLifetime == lifetime
	for _, c := range calls {
		bySeq.set(c.Node.Seq, c)
		if c.Analyzed {
			same = same && len(qs) < len(a.sweptIn) && a.input(c).same(a.sweptIn[len(qs)])
			qs = append(qs, c)
		}
	}
	out := a.swept
	if !same || len(qs) != len(a.sweptIn) {
		in, _ := a.sweepInputs(calls)
		out = sweepOf(a.tree, in, lifetime)
	}
	for i, q := range qs {
		o := out[i]
		q.Reusable = o.reusable
		if o.found {
			q.Match = bySeq.get(o.match).Node
			q.Since = q.Node.Started.Sub(o.ready)
		}
		if q.Bytes > 0 {
			q.Share = float64(o.reusable) / float64(q.Bytes)
		}
		q.Tokens = a.tokens(q, o.reusable, rep)
		switch model := q.Node.LLM.Model; {
		case o.found:
		case o.held:
			q.cold = fmt.Sprintf("no earlier request of %s had finished within the %s lifetime when it started", model, graph.FormatDuration(lifetime))
		default:
			q.cold = fmt.Sprintf("nothing earlier to reuse: no request of %s had finished when it started", model)
		}
	}
}

// sweepInputs are the analysed calls of calls and their sweep's inputs,
// as the graph's nodes say.
func (a *analysis) sweepInputs(calls []*Call) ([]sweepIn, []*Call) {
	in := make([]sweepIn, 0, len(calls))
	qs := make([]*Call, 0, len(calls))
	for _, c := range calls {
		if c.Analyzed {
			in = append(in, a.input(c))
			qs = append(qs, c)
		}
	}
	return in, qs
}

// input is analysed call c's sweep input, as its node says.
func (a *analysis) input(c *Call) sweepIn {
	n := c.Node
	return sweepIn{seq: n.Seq, started: n.Started, ended: n.Ended,
		ready: n.Status == record.StatusOK && !n.Ended.IsZero(), model: n.LLM.Model, p: a.prompts.get(n.Seq).p}
}
