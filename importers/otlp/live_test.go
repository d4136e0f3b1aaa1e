package otlp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
)

// TestLive: a trace is rewritten as it grows under one run, let go once
// ended and idle (later spans of it are rejected, counted), and a full
// buffer answers otel.ErrBusy.
func TestLive(t *testing.T) {
	ctx := context.Background()
	writes := map[string]int{}
	var last *importers.Session
	now := time.Unix(1767225600, 0) // the clock Debounce and Idle are measured by, moved by hand
	l := &Live{MaxSpans: 3, Idle: time.Nanosecond, Debounce: time.Nanosecond, Now: func() time.Time { return now },
		Write: func(ctx context.Context, s *importers.Session) (string, error) {
			writes[s.Source.ID]++
			last = s
			return "run-" + s.Source.ID[:4], nil
		}}
	t0 := time.Unix(1767225600, 0)
	sp := func(id, parent string, end time.Duration, attrs otel.Attrs) *otel.Span {
		s := &otel.Span{TraceID: "aaaa0000000000000000000000000001", SpanID: id, ParentID: parent, Start: t0, Attrs: attrs}
		if end > 0 {
			s.End = t0.Add(end)
		}
		return s
	}
	chat := otel.Attrs{"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
	if n, _, err := l.Consume(ctx, []*otel.Span{sp("02", "01", time.Second, chat)}); n != 0 || err != nil {
		t.Fatalf("Consume = %d, %v", n, err)
	}
	l.Flush(ctx, false)
	now = now.Add(time.Millisecond)
	l.Consume(ctx, []*otel.Span{sp("01", "", 2*time.Second, otel.Attrs{"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"})})
	l.Flush(ctx, false)
	if writes["aaaa0000000000000000000000000001"] != 2 || last.Trunk.Agent != "a" || countLLM(last.Trunk) != 1 {
		t.Fatalf("writes %v, last %+v: want the trace rewritten whole", writes, last.Trunk)
	}
	now = now.Add(time.Millisecond)
	l.Flush(ctx, false) // ended, written, idle: let go
	if open, closed, held := l.Stats(); open != 0 || closed != 1 || held != 0 {
		t.Fatalf("Stats = %d open, %d closed, %d spans; want it let go", open, closed, held)
	}
	if n, why, err := l.Consume(ctx, []*otel.Span{sp("03", "01", time.Second, chat)}); n != 1 || why == "" || err != nil {
		t.Errorf("late span: Consume = %d, %q, %v; want it rejected with a reason", n, why, err)
	}
	other := func(id string) *otel.Span {
		return &otel.Span{TraceID: "bbbb0000000000000000000000000002", SpanID: id, ParentID: "ff", Start: t0}
	}
	if _, _, err := l.Consume(ctx, []*otel.Span{other("1"), other("2"), other("3"), other("4")}); !errors.Is(err, otel.ErrBusy) {
		t.Errorf("over MaxSpans: err %v, want ErrBusy", err)
	}
}
