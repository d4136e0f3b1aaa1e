package otlp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/record"
)

var _ importers.Streamer = Format{}

// Stream implements importers.Streamer. An OTLP file — JSON lines, one
// JSON document or one protobuf request, each read as it comes by
// otel.Read — is read twice. The first pass keeps a count of spans per
// run (RunKey) and the file's problems; the second (importers.Wholes)
// holds the spans of each run until its last one has come, and the run
// is built alone (Build, importers.BuiltLater) when it is written, its
// spans let go. Memory so follows the traces open at once in the file — a
// Collector's file exporter and the document exports write each trace's
// spans close together — not the file. OpenLLMetry's one-span traces
// (regroup) are planned in the first pass from a stand-in of each
// (standIn: ids, times, service, scope and the attributes twice reads),
// and in the second each join's traces are held until the last has come
// (the execution's outermost span, which ends last), then joined as
// regroup joins them: what grows with the file is the first pass's
// count, and stand-in, a trace.
func (f Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	fh, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	var order []string
	bad := 0
	one := map[string]*loneSpan{} // an OpenLLMetry trace's stand-in while it has one span id
	names := map[string]string{}  // services and scopes, held once
	st, err := otel.Read(ctx, fh, otel.Limits{Keys: firstPassKeys}, func(s *otel.Span) error {
		if s.TraceID == "" || s.SpanID == "" {
			bad++
			return nil
		}
		key := RunKey(s)
		if _, ok := counts[key]; !ok {
			order = append(order, key)
			if strings.HasPrefix(s.Scope, "@traceloop/") {
				one[key] = standIn(s, key, names)
			}
		} else if o := one[key]; o != nil {
			if o.span != s.SpanID {
				delete(one, key)
			} else if o.end.IsZero() && !s.End.IsZero() {
				one[key] = standIn(s, key, names) // the copy Trace.Add keeps
			}
		}
		counts[key]++
		return nil
	})
	fh.Close()
	if err != nil {
		if errors.Is(err, otel.ErrNotOTLP) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	if bad > 0 {
		st.Problems = append(st.Problems, otel.Problem{Err: fmt.Sprintf("%d spans without a trace or span id dropped", bad)})
		sort.SliceStable(st.Problems, func(i, j int) bool { return st.Problems[i].Line < st.Problems[j].Line })
	}
	if opt.Strict && len(st.Problems) > 0 {
		p := st.Problems[0]
		return nil, fmt.Errorf("%s:%d: %s", path, p.Line, p.Err)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%s: no spans in it", path)
	}
	p, counts := planJoins(order, counts, one)
	one = nil
	order = p.order
	// each run is built as the second pass emits it, in the reading
	// goroutine, while the one before is written
	build := func(key string, t *Trace) *importers.Session {
		b := Build(t, opt)
		for _, p := range st.Problems {
			b.Report.Problems = append(b.Report.Problems, importers.Problem{File: path, Line: p.Line, Err: p.Err})
		}
		if st.Truncated > 0 {
			b.Report.Skipped[fmt.Sprintf("attribute values over %d MiB (cut)", otel.DefaultMaxValue>>20)] += st.Truncated
		}
		if j, ok := p.roots[key]; ok {
			b.Report.Skipped[nestedSkip] += len(j.members)
			if len(j.doubled) > 0 {
				b.Report.Skipped[doubledSkip] += len(j.doubled)
			}
		}
		return b
	}
	w := importers.NewWholes(ctx, len(order), func(ctx context.Context, emit func(string, *importers.Session) error) error {
		return secondPass(ctx, path, counts, p, func(key string, t *Trace) error { return emit(key, build(key, t)) })
	})
	out := make([]*importers.Session, len(order))
	for i, key := range order {
		s := &importers.Session{Source: record.Source{Format: Name, ID: key, Path: path}, Close: w.Done}
		importers.BuiltLater(s, func() (*importers.Session, error) {
			b, ok, err := w.Take(key)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%s changed while it was read: the spans of %s are gone", path, key)
			}
			return b, nil
		})
		out[i] = s
	}
	return out, nil
}

// joins is how a file's OpenLLMetry one-span traces join (regroup),
// found in the first pass from their stand-ins: the runs in the order
// Read gives them, each joined trace's plan by its root's key and the
// root's key of each trace that went into one. It holds keys only, the
// stand-ins let go.
type joins struct {
	order []string
	roots map[string]*plan
	into  map[string]string
}

// plan is a joined trace's: its members' keys, each with the span id it
// nests in, in regroup's order, and the keys of the second records left
// out (twice).
type plan struct {
	members []planned
	doubled []string
}

type planned struct{ key, parent string }

// trace joins the one-span traces of root and its plan's members (parts,
// by their keys) as join.trace does.
func (p *plan) trace(root string, parts map[string]*Trace) *Trace {
	t := NewTrace(root)
	t.Add(parts[root].spans[0])
	for _, m := range p.members {
		c := *parts[m.key].spans[0]
		c.TraceID, c.ParentID = root, m.parent
		t.Add(&c)
	}
	return t
}

// planJoins plans the joins of the lonely traces among order (one holds
// their stand-ins), moving the counts of the traces joined to their
// root's; counts is returned anew, without them.
func planJoins(order []string, counts map[string]int, one map[string]*loneSpan) (joins, map[string]int) {
	p := joins{order: order}
	ls := make([]lone, 0, len(one))
	for _, key := range order {
		if o := one[key]; o != nil && o.parentless && !o.end.IsZero() && strings.HasPrefix(o.scope, "@traceloop/") {
			ls = append(ls, o.lone)
		}
	}
	js := joinLone(ls)
	if len(js) == 0 {
		return p, counts
	}
	p.roots, p.into = map[string]*plan{}, map[string]string{}
	for _, j := range js {
		root := ls[j.root].trace
		pl := &plan{members: make([]planned, len(j.members))}
		for i, m := range j.members {
			pl.members[i] = planned{ls[m.i].trace, m.parent}
			p.into[ls[m.i].trace] = root
		}
		for _, d := range j.doubled {
			p.into[ls[d].trace] = root
			pl.doubled = append(pl.doubled, ls[d].trace)
		}
		p.roots[root] = pl
	}
	p.order = make([]string, 0, len(order)-len(p.into))
	left := make(map[string]int, len(order)-len(p.into))
	for _, key := range order {
		if root, ok := p.into[key]; ok {
			left[root] += counts[key]
			continue
		}
		p.order = append(p.order, key)
		left[key] += counts[key]
	}
	return p, left
}

// firstPassKeys are the attributes the first pass reads: RunKey's and
// loneOf's.
var firstPassKeys = []string{"session.id", otel.AttrOperationName, "gen_ai.request.model", "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.tool.definitions"}

// loneSpan is what the first pass keeps of the span of a trace that may
// be lonely: what regroup reads (lone), and whether it has a parent.
type loneSpan struct {
	lone
	parentless bool
}

// standIn is s's loneSpan, its trace id the run's key and its service and
// scope the ones names holds (a lines file gives each span its own).
func standIn(s *otel.Span, key string, names map[string]string) *loneSpan {
	l := &loneSpan{lone: loneOf(s), parentless: s.ParentID == ""}
	l.trace = key
	for _, n := range []*string{&l.service, &l.scope} {
		if v, ok := names[*n]; ok {
			*n = v
		} else if len(names) < 1000 {
			names[*n] = *n
		}
	}
	return l
}

// secondPass reads the file's spans again, holding each run's in its
// trace, and emits a trace once all the spans the first pass counted came.
// The one-span traces of a join are held each alone and joined, as
// regroup joins them, once the last has come.
func secondPass(ctx context.Context, path string, counts map[string]int, p joins, emit func(string, *Trace) error) error {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	held, got := map[string]*Trace{}, map[string]int{}
	parts := map[string]*Trace{} // a joined trace's one-span traces, by their keys
	_, err = otel.Read(ctx, f, otel.Limits{}, func(s *otel.Span) error {
		if s.TraceID == "" || s.SpanID == "" {
			return nil
		}
		k := RunKey(s)
		root, in := p.into[k]
		if _, isRoot := p.roots[k]; in || isRoot {
			if !in {
				root = k
			}
			t := parts[k]
			if t == nil {
				t = NewTrace(k)
				parts[k] = t
			}
			t.Add(s)
			if got[root]++; got[root] < counts[root] {
				return nil
			}
			pl := p.roots[root]
			joined := pl.trace(root, parts)
			delete(parts, root)
			for _, m := range pl.members {
				delete(parts, m.key)
			}
			for _, k := range pl.doubled {
				delete(parts, k)
			}
			return emit(root, joined)
		}
		t := held[k]
		if t == nil {
			t = NewTrace(k)
			held[k] = t
		}
		t.Add(s)
		if got[k]++; got[k] == counts[k] {
			delete(held, k)
			return emit(k, t)
		}
		return nil
	})
	return err
}
