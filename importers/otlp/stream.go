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
// spans close together — not the file. A file of OpenLLMetry's one-span
// traces (joined across the file, regroup) is read whole, as Read does.
func (f Format) Stream(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	fh, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	var order []string
	bad, lone := 0, false
	st, err := otel.Read(ctx, fh, otel.Limits{}, func(s *otel.Span) error {
		if s.TraceID == "" || s.SpanID == "" {
			bad++
			return nil
		}
		if strings.HasPrefix(s.Scope, "@traceloop/") {
			lone = true
		}
		key := RunKey(s)
		if _, ok := counts[key]; !ok {
			order = append(order, key)
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
	if lone {
		return f.Read(ctx, path, opt)
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
	w := importers.NewWholes(ctx, len(order), func(ctx context.Context, emit func(string, *Trace) error) error {
		return secondPass(ctx, path, counts, emit)
	})
	out := make([]*importers.Session, len(order))
	for i, key := range order {
		s := &importers.Session{Source: record.Source{Format: Name, ID: key, Path: path}, Close: w.Done}
		importers.BuiltLater(s, func() (*importers.Session, error) {
			t, ok, err := w.Take(key)
			if err != nil {
				return nil, err
			}
			if !ok {
				return nil, fmt.Errorf("%s changed while it was read: the spans of %s are gone", path, key)
			}
			b := Build(t, opt)
			for _, p := range st.Problems {
				b.Report.Problems = append(b.Report.Problems, importers.Problem{File: path, Line: p.Line, Err: p.Err})
			}
			if st.Truncated > 0 {
				b.Report.Skipped[fmt.Sprintf("attribute values over %d MiB (cut)", otel.DefaultMaxValue>>20)] += st.Truncated
			}
			return b, nil
		})
		out[i] = s
	}
	return out, nil
}

// secondPass reads the file's spans again, holding each run's in its
// trace, and emits a trace once all the spans the first pass counted came.
func secondPass(ctx context.Context, path string, counts map[string]int, emit func(string, *Trace) error) error {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return err
	}
	defer f.Close()
	held, got := map[string]*Trace{}, map[string]int{}
	_, err = otel.Read(ctx, f, otel.Limits{}, func(s *otel.Span) error {
		if s.TraceID == "" || s.SpanID == "" {
			return nil
		}
		k := RunKey(s)
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
