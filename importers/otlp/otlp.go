// Package otlp imports OpenTelemetry traces (DESIGN §14): OTLP/JSON lines,
// one OTLP/JSON document (Jaeger's /api/v3/traces answer included) or
// OTLP/protobuf, read by package otel, each trace mapped by Build to one
// Session in the GenAI, OpenInference and Vercel AI SDK conventions. Live
// collects the same mapping as spans arrive at a receiver.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"io"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
)

// Name is the format's name (--format otlp, record.Source.Format).
const Name = "otlp"

// Format is the otlp importer.
type Format struct{}

var _ importers.Format = Format{}

// Name implements importers.Format.
func (Format) Name() string { return Name }

// Detect reports whether path starts like OTLP trace data, reading 4 KiB.
func (Format) Detect(path string) bool {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	return otel.LooksLikeOTLP(head[:n])
}

// Read implements importers.Format: one Session per trace, in the order the
// traces first appear. Spans are held in otel's flat form until the file
// has been read (a trace's spans may come in any order and in any line).
func (Format) Read(ctx context.Context, path string, opt importers.Options) ([]*importers.Session, error) {
	f, err := importers.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	traces, st, err := ReadTraces(ctx, f)
	if err != nil {
		if errors.Is(err, otel.ErrNotOTLP) {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return nil, err
	}
	if opt.Strict && len(st.Problems) > 0 {
		p := st.Problems[0]
		return nil, fmt.Errorf("%s:%d: %s", path, p.Line, p.Err)
	}
	traces, nested, doubled := regroup(traces)
	// traces are independent: build them on every core, keep file order
	out := make([]*importers.Session, len(traces))
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for i, t := range traces {
		g.Go(func() error {
			s := Build(t, opt)
			s.Source.Path = path
			for _, p := range st.Problems {
				s.Report.Problems = append(s.Report.Problems, importers.Problem{File: path, Line: p.Line, Err: p.Err})
			}
			if st.Truncated > 0 {
				s.Report.Skipped[fmt.Sprintf("attribute values over %d MiB (cut)", otel.DefaultMaxValue>>20)] += st.Truncated
			}
			if n := nested[t.ID]; n > 0 {
				s.Report.Skipped[nestedSkip] += n
			}
			if n := doubled[t.ID]; n > 0 {
				s.Report.Skipped[doubledSkip] += n
			}
			out[i] = s
			return nil
		})
	}
	g.Wait()
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no spans in it", path)
	}
	return out, nil
}

// What a run of joined one-span traces says of them (regroup): said
// plainly, the run's structure is inferred.
const (
	nestedSkip  = "spans that were traces of their own, with no parent (OpenLLMetry), joined into this run by service and time: their nesting is inferred from their times"
	doubledSkip = "model calls two instrumentations recorded (one copy kept)"
)

// RunKey is the run a span belongs to: its trace, except for Claude
// Code, which starts a trace per user prompt (and per background
// notification): its spans are one run per session (session.id).
func RunKey(s *otel.Span) string {
	if strings.HasPrefix(s.Scope, "com.anthropic.claude_code") || strings.HasPrefix(s.Name, "claude_code.") {
		if id := s.Attrs.Str("session.id"); id != "" {
			return sessionPrefix + id
		}
	}
	return s.TraceID
}

// sessionPrefix starts the RunKey of a Claude Code session.
const sessionPrefix = "claude-code:"

// isSession reports whether key (RunKey) is a Claude Code session's: a
// run of many traces, one per prompt, with no end of its own.
func isSession(key string) bool { return strings.HasPrefix(key, sessionPrefix) }

// ReadTraces reads r's spans into traces (RunKey), in order of first
// appearance. A
// span without a trace or span id is counted as a problem and dropped.
func ReadTraces(ctx context.Context, r io.Reader) ([]*Trace, otel.Stats, error) {
	byID := map[string]*Trace{}
	var order []*Trace
	bad := 0
	st, err := otel.Read(ctx, r, otel.Limits{}, func(s *otel.Span) error {
		if s.TraceID == "" || s.SpanID == "" {
			bad++
			return nil
		}
		key := RunKey(s)
		t := byID[key]
		if t == nil {
			t = NewTrace(key)
			byID[key] = t
			order = append(order, t)
		}
		t.Add(s)
		return nil
	})
	if bad > 0 {
		st.Problems = append(st.Problems, otel.Problem{Err: fmt.Sprintf("%d spans without a trace or span id dropped", bad)})
		sort.SliceStable(st.Problems, func(i, j int) bool { return st.Problems[i].Line < st.Problems[j].Line })
	}
	return order, st, err
}

// Start is when t's first span started (zero without spans).
func (t *Trace) Start() time.Time {
	var first time.Time
	for _, s := range t.spans {
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
	}
	return first
}
