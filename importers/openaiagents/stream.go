package openaiagents

import (
	"context"
	"fmt"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

var _ importers.Streamer = Format{}

// Stream implements importers.Streamer: the file (lines or one document)
// is read twice, an object at a time. The first pass counts each trace's
// spans and keeps what the file says of each trace (its workflow, group,
// place) and its problems, no span; the second (importers.Wholes) holds
// a trace's spans until the last one came, and the trace is built alone
// when its run is written (importers.BuiltLater), its spans let go.
// Memory so follows the traces open at once in the file, not the file.
func (Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	first := newCollector(path, opt)
	first.count = true
	if err := first.readFile(ctx); err != nil {
		return nil, err
	}
	if len(first.order) == 0 {
		return nil, fmt.Errorf("%s: no Agents SDK trace or span in the file", path)
	}
	want := map[string]int{}
	for _, t := range first.order {
		want[t.id] = t.n
	}
	w := importers.NewWholes(ctx, len(first.order), func(ctx context.Context, emit func(string, *trace) error) error {
		c := newCollector(path, opt)
		c.want, c.emit = want, emit
		return c.readFile(ctx)
	})
	out := make([]*importers.Session, len(first.order))
	for i, meta := range first.order {
		s := &importers.Session{Source: record.Source{Format: Name, ID: meta.id, Path: path}, Close: w.Done}
		importers.BuiltLater(s, func() (*importers.Session, error) {
			t := &trace{id: meta.id, spans: map[string]*span{}}
			if meta.n > 0 {
				got, ok, err := w.Take(meta.id)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, fmt.Errorf("%s changed while it was read: the spans of trace %s are gone", path, meta.id)
				}
				t = got
			}
			t.workflow, t.group, t.order = meta.workflow, meta.group, meta.order
			return first.session(t), nil
		})
		out[i] = s
	}
	return out, nil
}
