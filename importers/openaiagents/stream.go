package openaiagents

import (
	"context"
	"fmt"

	"github.com/inspect-dev/inspect/importers"
)

var _ importers.EachStreamer = Format{}

// meta is what the first pass keeps of a trace: its span count and what
// its session needs of the trace object (workflow, group), no span.
type meta struct {
	id, workflow, group string
	n                   int
}

// StreamEach implements importers.EachStreamer: the file (lines or one
// document) is read twice, an object at a time. The first pass counts
// each trace's spans and keeps what the file says of each trace (its
// workflow, group, place) and its problems, no span; the second holds a
// trace's spans until the last one came, and builds each trace's session
// alone, in the order the traces first appear, handing it to each and
// letting it go. Memory so follows the traces open at once in the file
// (and those that end before an earlier one), not the file: a trace not
// yet handed over costs its meta.
func (Format) StreamEach(ctx context.Context, path string, opt importers.Options, each func(*importers.Session) error) error {
	first := newCollector(path, opt)
	first.count = true
	if err := first.readFile(ctx); err != nil {
		return err
	}
	if len(first.order) == 0 {
		return fmt.Errorf("%s: no Agents SDK trace or span in the file", path)
	}
	// The first pass's traces go; their metas stay, workflow names shared.
	metas := make([]meta, len(first.order))
	want := make(map[string]int, len(first.order))
	names := map[string]string{}
	for i, t := range first.order {
		wf, ok := names[t.workflow]
		if !ok {
			wf = t.workflow
			names[wf] = wf
		}
		metas[i] = meta{id: t.id, workflow: wf, group: t.group, n: t.n}
		want[t.id] = t.n
	}
	first.order, first.traces, names = nil, nil, nil

	held := map[string]*trace{}
	next := 0
	// flush hands over, in order, every trace whose spans are all in.
	flush := func() error {
		for next < len(metas) {
			m := &metas[next]
			t := held[m.id]
			if t == nil && m.n > 0 {
				return nil
			}
			delete(held, m.id)
			if t == nil {
				t = &trace{id: m.id, spans: map[string]*span{}}
			}
			t.workflow, t.group, t.order = m.workflow, m.group, next
			*m = meta{}
			next++
			if err := each(first.session(t)); err != nil {
				return err
			}
		}
		return nil
	}
	c := newCollector(path, opt)
	c.want = want
	c.emit = func(id string, t *trace) error {
		held[id] = t
		return flush()
	}
	if err := flush(); err != nil { // the traces without a span before the first
		return err
	}
	if err := c.readFile(ctx); err != nil {
		return err
	}
	if next < len(metas) {
		return fmt.Errorf("%s changed while it was read: the spans of trace %s are gone", path, metas[next].id)
	}
	return nil
}

// Stream implements importers.Streamer: StreamEach's sessions, collected
// (each built whole).
func (f Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	var out []*importers.Session
	err := f.StreamEach(ctx, path, opt, func(s *importers.Session) error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
