package otlp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
)

// memSpans is a SpanStore in memory; runs are the traces recorded.
type memSpans struct {
	mu   sync.Mutex
	m    map[string][][]byte
	runs map[string]string
}

func (s *memSpans) KeepSpans(ctx context.Context, id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][][]byte{}
	}
	s.m[id] = append(s.m[id], append([]byte(nil), data...))
	return nil
}

func (s *memSpans) TraceSpans(ctx context.Context, id string, fn func([]byte) error) error {
	s.mu.Lock()
	batches := s.m[id]
	s.mu.Unlock()
	for _, b := range batches {
		if err := fn(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *memSpans) DropSpans(ctx context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
	return nil
}

func (s *memSpans) RunBySource(ctx context.Context, format, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[id], nil
}

// record is a Live.Write noting the run in s.
func (s *memSpans) record(writes map[string]int, last **importers.Session) func(ctx context.Context, ss *importers.Session) (string, error) {
	return func(ctx context.Context, ss *importers.Session) (string, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.runs == nil {
			s.runs = map[string]string{}
		}
		id := "run-" + ss.Source.ID[:4]
		s.runs[ss.Source.ID] = id
		if writes != nil {
			writes[ss.Source.ID]++
		}
		if last != nil {
			*last = ss
		}
		return id, nil
	}
}

// TestLive: a trace is rewritten as it grows under one run; let go for
// memory, it is read whole again when a span of it comes and the span
// merges into its run; so after a restart (a new Live on the same kept
// spans); once done (ended and idle) its kept spans are dropped and a
// span that still comes is rejected, its run left as it is (before: a
// span after a restart replaced the run with itself alone). Spans of one
// trace past its share are rejected, counted, and other traces go on;
// only while what is held is unwritten does Consume answer otel.ErrBusy,
// and the next flush writes it so the export gets in.
func TestLive(t *testing.T) {
	ctx := context.Background()
	writes := map[string]int{}
	var last *importers.Session
	now := time.Unix(1767225600, 0) // the clock Debounce and Idle are measured by, moved by hand
	kept := &memSpans{}
	l := &Live{Spans: kept, MaxBytes: 16 << 10, Idle: time.Minute, Debounce: time.Nanosecond, Now: func() time.Time { return now },
		Write: kept.record(writes, &last)}
	t0 := time.Unix(1767225600, 0)
	const trace = "aaaa0000000000000000000000000001"
	sp := func(id, parent string, end time.Duration, attrs otel.Attrs) *otel.Span {
		s := &otel.Span{TraceID: trace, SpanID: id, ParentID: parent, Start: t0, Attrs: attrs}
		if end > 0 {
			s.End = t0.Add(end)
		}
		return s
	}
	chat := otel.Attrs{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
	if n, _, err := l.Consume(ctx, []*otel.Span{sp("0000000000000002", "0000000000000001", time.Second, chat)}); n != 0 || err != nil {
		t.Fatalf("Consume = %d, %v", n, err)
	}
	l.Flush(ctx, false)
	now = now.Add(time.Millisecond)
	l.Consume(ctx, []*otel.Span{sp("0000000000000001", "", 2*time.Second, otel.Attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})})
	l.Flush(ctx, false)
	if writes[trace] != 2 || last.Trunk.Agent != "a" || countLLM(last.Trunk) != 1 {
		t.Fatalf("writes %v, last %+v: want the trace rewritten whole", writes, last.Trunk)
	}
	// Memory runs short: the written trace leaves it, its spans kept.
	l.mu.Lock()
	l.letGo(1)
	l.mu.Unlock()
	if open, _, held := l.Stats(); open != 0 || held != 0 {
		t.Fatalf("Stats = %d open, %d bytes; want it let go", open, held)
	}
	if n, why, err := l.Consume(ctx, []*otel.Span{sp("0000000000000003", "0000000000000001", time.Second, chat)}); n != 0 || err != nil {
		t.Errorf("late span: Consume = %d, %q, %v; want it taken", n, why, err)
	}
	l.Flush(ctx, false)
	if writes[trace] != 3 || countLLM(last.Trunk) != 2 {
		t.Errorf("after the late span: %d writes, %d model calls in the run; want the run rewritten with both calls", writes[trace], countLLM(last.Trunk))
	}
	// A restart: a new Live, the same kept spans.
	l = &Live{Spans: kept, MaxBytes: 16 << 10, Idle: time.Minute, Debounce: time.Nanosecond, Now: func() time.Time { return now },
		Write: kept.record(writes, &last)}
	if n, why, err := l.Consume(ctx, []*otel.Span{sp("0000000000000004", "0000000000000001", time.Second, chat)}); n != 0 || err != nil {
		t.Errorf("a span after a restart: Consume = %d, %q, %v; want it taken", n, why, err)
	}
	l.Flush(ctx, false)
	if writes[trace] != 4 || countLLM(last.Trunk) != 3 {
		t.Errorf("after a restart: %d writes, %d model calls in the run; want it rewritten with all three calls", writes[trace], countLLM(last.Trunk))
	}
	// Done: ended and idle past Idle.
	now = now.Add(2 * time.Minute)
	l.Flush(ctx, false)
	if open, closed, held := l.Stats(); open != 0 || closed != 1 || held != 0 || kept.m[trace] != nil {
		t.Fatalf("Stats = %d open, %d closed, %d bytes, %d batches kept; want it done and its spans dropped", open, closed, held, len(kept.m[trace]))
	}
	if n, why, err := l.Consume(ctx, []*otel.Span{sp("0000000000000005", "0000000000000001", time.Second, chat)}); n != 1 || !strings.Contains(why, "already recorded and done") || err != nil {
		t.Errorf("a span of a trace done: Consume = %d, %q, %v; want it rejected with the reason", n, why, err)
	}
	l.Flush(ctx, false)
	if writes[trace] != 4 {
		t.Errorf("%d writes; want the run of a trace done left as it is", writes[trace])
	}

	// One trace may hold a quarter of MaxBytes: its spans past that are
	// rejected, with the reason, and the others' still come in.
	big := func(trace, id string) *otel.Span {
		return &otel.Span{TraceID: trace, SpanID: id, ParentID: "00000000000000ff", Start: t0, Attrs: otel.Attrs{"pad": strings.Repeat("x", 1500)}}
	}
	const fat = "bbbb0000000000000000000000000002"
	var rejected int
	var why string
	for i, id := range []string{"0000000000000001", "0000000000000002", "0000000000000003", "0000000000000004"} {
		n, w, err := l.Consume(ctx, []*otel.Span{big(fat, id)})
		if errors.Is(err, otel.ErrBusy) {
			l.Flush(ctx, false) // the exporter's retry, after the flush Consume asked for
			n, w, err = l.Consume(ctx, []*otel.Span{big(fat, id)})
		}
		if err != nil {
			t.Fatalf("span %d of the fat trace: %v", i+1, err)
		}
		rejected, why = rejected+n, why+w
	}
	if rejected == 0 || !strings.Contains(why, "a trace may hold") {
		t.Errorf("a trace past MaxBytes: %d rejected (%q); want its last spans rejected with the reason", rejected, why)
	}
	if _, _, held := l.Stats(); held > l.MaxBytes {
		t.Errorf("%d bytes held, over MaxBytes %d", held, l.MaxBytes)
	}
	if n, _, err := l.Consume(ctx, []*otel.Span{big("eeee0000000000000000000000000005", "0000000000000001")}); n != 0 || err != nil {
		t.Errorf("another trace beside the full one: Consume = %d, %v; want it taken", n, err)
	}

	// Unwritten traces holding it all: busy, until a flush writes them.
	other2 := &memSpans{}
	l2 := &Live{Spans: other2, MaxBytes: 4 << 10, MaxTraceBytes: 4 << 10, Debounce: time.Hour, Now: func() time.Time { return now },
		Write: other2.record(nil, nil)}
	for i := range 2 {
		if _, _, err := l2.Consume(ctx, []*otel.Span{big("cccc000000000000000000000000000"+string(rune('1'+i)), "0000000000000001")}); err != nil {
			t.Fatalf("Consume: %v", err)
		}
	}
	other := big("dddd0000000000000000000000000004", "0000000000000001")
	if _, _, err := l2.Consume(ctx, []*otel.Span{other}); !errors.Is(err, otel.ErrBusy) {
		t.Errorf("over MaxBytes with nothing written: err %v, want ErrBusy", err)
	}
	l2.Flush(ctx, false) // Consume asked for every trace to be written, debounce or not
	if _, _, err := l2.Consume(ctx, []*otel.Span{other}); err != nil {
		t.Errorf("after the flush: %v, want the export taken", err)
	}
}
