package otlp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/otel"
)

// Live records traces as their spans arrive at a receiver (inspect
// collect, serve --otlp): Consume takes each export request's spans, Run
// writes every trace that changed as a run (again and again as it grows:
// a re-import of the same trace id updates its run) until its context
// ends, then flushes. Spans are grouped by the run they belong to
// (RunKey), as a file's are: a trace, except that every trace of one
// Claude Code session (a trace per prompt and per background
// notification) is one run; "trace" below means that group.
//
// Every span taken is kept in Spans (redacted) before it is held, while
// its trace is in flight: a trace held in memory can be let go at any time
// once written, and is read whole again when more of its spans come —
// after memory ran short, or after a restart: a late span merges into its
// run instead of replacing it. A trace is done once ended and idle past
// Idle, or idle past OpenIdle: its kept spans are dropped, and a span of
// it that still comes is rejected (counted in the OTLP answer), its run
// left as it is — never replaced by the late span alone. A Claude Code
// session is never done that way: it may be idle for hours between two
// prompts, so once idle it only leaves memory, its spans kept, and the
// next prompt's trace merges into its run.
//
// Memory is bounded in bytes (otel.Span.Size), not spans: past MaxBytes,
// written traces are let go, least recently active first; a trace alone
// may hold MaxTraceBytes, and its spans past that are rejected (counted in
// the OTLP answer); only while traces not yet written hold it all does
// Consume answer otel.ErrBusy (the exporter retries), and Run writes them
// at once, so a flood cannot keep later exports out. An ended, written
// trace is let go after Idle, one that has not ended after OpenIdle
// without a span (written first): spans whose parent never comes
// (orphans) cannot hold memory for ever.
type Live struct {
	// Write records a session and returns its run id (importers.Write on
	// the store).
	Write func(ctx context.Context, s *importers.Session) (string, error)
	// Spans keeps the spans taken and gives them back (the store).
	Spans SpanStore
	// OnRun is told of each run the first time it is written and when its
	// trace has ended; may be nil.
	OnRun func(runID string, s *importers.Session, spans int, ended bool)
	// OnError is told of a failed write (the trace is tried again); may be nil.
	OnError  func(traceID string, err error)
	Options  importers.Options
	Source   string        // the Source.Path of the runs (the listen URL)
	Debounce time.Duration // the least time between two writes of one trace; 0 = 250ms
	Idle     time.Duration // how long an ended, written trace is kept; 0 = 30s
	OpenIdle time.Duration // how long a trace that has not ended is kept after its last span; 0 = 10m
	MaxBytes int64         // bytes of spans held at most; 0 = DefaultMaxBytes
	// MaxTraceBytes is what one trace may hold; 0 = a quarter of MaxBytes.
	MaxTraceBytes int64
	// Now is the clock Debounce and Idle are measured by (nil = time.Now);
	// tests move it instead of sleeping.
	Now func() time.Time

	mu       sync.Mutex
	traces   map[string]*liveTrace
	held     int64 // bytes of the spans held
	let      int   // traces let go
	pressure bool  // Consume was busy: write every trace now
	kick     chan struct{}
}

// SpanStore keeps the spans a receiver took, per run in flight (by its
// RunKey, the run's source id), and knows the runs recorded (*store.DB
// satisfies it).
type SpanStore interface {
	// KeepSpans adds a batch of spans of the run of key (otel.EncodeSpans).
	KeepSpans(ctx context.Context, key string, data []byte) error
	// TraceSpans calls fn with each batch kept for key, in order.
	TraceSpans(ctx context.Context, key string, fn func(data []byte) error) error
	// DropSpans forgets the spans kept for key (its trace is done).
	DropSpans(ctx context.Context, key string) error
	// RunBySource is the id of the run recorded from source id of
	// format ("" when none).
	RunBySource(ctx context.Context, format, id string) (string, error)
}

// DefaultMaxBytes is what Live holds at most when MaxBytes is 0.
const DefaultMaxBytes = 256 << 20

type liveTrace struct {
	t         *Trace
	runID     string
	dirty     bool
	seen      time.Time // last span arrival
	written   time.Time
	cost      time.Duration // the last write's duration
	announced bool          // OnRun told of its first write
	endTold   bool          // OnRun told it ended
	full      bool          // it holds MaxTraceBytes: its later spans are rejected
}

func (l *Live) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

func (l *Live) init() {
	if l.traces == nil {
		l.traces = map[string]*liveTrace{}
		l.kick = make(chan struct{}, 1)
	}
}

func (l *Live) maxBytes() int64 {
	if l.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return l.MaxBytes
}

func (l *Live) signal() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// Consume implements otel.Consumer.
func (l *Live) Consume(ctx context.Context, spans []*otel.Span) (int, string, error) {
	if l.Spans == nil {
		return 0, "", errors.New("internal error: otlp.Live without a SpanStore")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	max, traceMax := l.maxBytes(), l.traceMax()
	// The batch by run (RunKey), in the order its runs first come.
	var ids []string
	byTrace := map[string][]*otel.Span{}
	var size int64
	for _, s := range spans {
		key := RunKey(s)
		if _, ok := byTrace[key]; !ok {
			ids = append(ids, key)
		}
		byTrace[key] = append(byTrace[key], s)
		size += s.Size()
	}
	if l.held+size > max {
		l.letGo(l.held + size - max)
		if l.held+size > max && l.unwritten() {
			// What is held is not written yet: write it all now, and let
			// the exporter come back.
			l.pressure = true
			l.signal()
			return 0, "", otel.ErrBusy
		}
		// Every trace held is written (what is left is this batch's):
		// take it, past MaxBytes by one batch at most.
	}
	now := l.now()
	rejected, closed := 0, 0
	for _, id := range ids {
		lt, err := l.take(ctx, id)
		if err != nil {
			return rejected, "", err
		}
		if lt == nil { // done: its run stays as it is
			closed += len(byTrace[id])
			continue
		}
		lt.seen = now
		var keep []*otel.Span
		for _, s := range byTrace[id] {
			if lt.full || lt.t.Bytes()+s.Size() > traceMax {
				lt.full = true
				rejected++
				continue
			}
			keep = append(keep, s)
		}
		if len(keep) == 0 {
			continue
		}
		data, err := otel.EncodeSpans(redactSpans(keep))
		if err == nil {
			err = l.Spans.KeepSpans(ctx, id, data)
		}
		if err != nil {
			return rejected, "", fmt.Errorf("keep the spans of trace %s: %w", id, err)
		}
		before := lt.t.Bytes()
		for _, s := range keep {
			lt.t.Add(s)
		}
		l.held += lt.t.Bytes() - before
		lt.dirty = true
	}
	l.signal()
	var why []string
	if rejected > 0 {
		why = append(why, fmt.Sprintf("%d spans of traces past the %d KiB a trace may hold in the receiver", rejected, traceMax>>10))
	}
	if closed > 0 {
		why = append(why, fmt.Sprintf("%d spans of traces already recorded and done", closed))
	}
	return rejected + closed, strings.Join(why, "; "), nil
}

// traceMax is what one trace may hold: MaxTraceBytes, else a quarter of
// MaxBytes.
func (l *Live) traceMax() int64 {
	if l.MaxTraceBytes > 0 {
		return l.MaxTraceBytes
	}
	return l.maxBytes() / 4
}

// unwritten reports whether a trace held has spans not written yet.
func (l *Live) unwritten() bool {
	for _, lt := range l.traces {
		if lt.dirty {
			return true
		}
	}
	return false
}

// take returns the trace id as held — read whole from Spans when it is
// not (a trace let go, or received before a restart).
func (l *Live) take(ctx context.Context, id string) (*liveTrace, error) {
	if lt := l.traces[id]; lt != nil {
		return lt, nil
	}
	lt := &liveTrace{t: NewTrace(id)}
	traceMax := l.traceMax()
	err := l.Spans.TraceSpans(ctx, id, func(data []byte) error {
		spans, err := otel.DecodeSpans(data)
		if err != nil {
			return err
		}
		for _, s := range spans {
			lt.t.Add(s)
		}
		if lt.t.Bytes() > traceMax {
			return errFull
		}
		return nil
	})
	switch {
	case errors.Is(err, errFull):
		// what was written of it stays; none of it is held, nothing more taken
		lt.t, lt.full = NewTrace(id), true
	case err != nil:
		return nil, fmt.Errorf("read the spans kept of trace %s: %w", id, err)
	case lt.t.Len() == 0:
		// Nothing kept: a new trace, or one done whose run stays as it is.
		run, err := l.Spans.RunBySource(ctx, Name, id)
		if err != nil {
			return nil, fmt.Errorf("look for the run of trace %s: %w", id, err)
		}
		if run != "" {
			return nil, nil
		}
	}
	if lt.t.Len() > 0 || lt.full {
		lt.announced, lt.endTold = true, lt.t.Ended() // it was recorded before
		l.letGo(l.held + lt.t.Bytes() - l.maxBytes())
	}
	l.traces[id] = lt
	l.held += lt.t.Bytes()
	return lt, nil
}

var errFull = errors.New("the trace holds more than the receiver may")

// letGo lets go of the clean traces (written since their last span),
// least recently active first, until need bytes are free (need ≤ 0:
// none). A trace that is full keeps its place, holding no span: its later
// spans are still rejected without reading it again.
func (l *Live) letGo(need int64) {
	if need <= 0 {
		return
	}
	var clean []string
	for id, lt := range l.traces {
		if !lt.dirty && lt.t.Len() > 0 {
			clean = append(clean, id)
		}
	}
	sort.Slice(clean, func(i, j int) bool { return l.traces[clean[i]].seen.Before(l.traces[clean[j]].seen) })
	for _, id := range clean {
		if need <= 0 {
			return
		}
		need -= l.traces[id].t.Bytes()
		l.drop(id)
	}
}

// drop lets go of trace id's spans: of the trace too, unless it is full.
func (l *Live) drop(id string) {
	lt := l.traces[id]
	l.held -= lt.t.Bytes()
	if lt.full {
		lt.t = NewTrace(id)
		return
	}
	l.let++
	delete(l.traces, id)
}

// evict lets go for good of the written, clean traces that are idle (an
// ended one past Idle, one that has not ended past OpenIdle) and returns
// their ids, whose kept spans are to be dropped. An idle Claude Code
// session only leaves memory: its spans stay kept for its next prompt.
func (l *Live) evict(now time.Time) []string {
	idle, open := l.idle()
	var done []string
	for id, lt := range l.traces {
		if lt.dirty {
			continue
		}
		if age := now.Sub(lt.seen); age > open || age > idle && lt.t.Ended() {
			l.held -= lt.t.Bytes()
			l.let++
			delete(l.traces, id)
			if !isSession(id) {
				done = append(done, id)
			}
		}
	}
	sort.Strings(done)
	return done
}

func (l *Live) idle() (ended, open time.Duration) {
	ended, open = l.Idle, l.OpenIdle
	if ended <= 0 {
		ended = 30 * time.Second
	}
	if open <= 0 {
		open = 10 * time.Minute
	}
	return ended, open
}

// Run writes changed traces until ctx ends, then writes every one that
// changed since (Ctrl-C flushes) and returns.
func (l *Live) Run(ctx context.Context) {
	l.mu.Lock()
	l.init()
	kick := l.kick
	l.mu.Unlock()
	debounce := l.Debounce
	if debounce <= 0 {
		debounce = 250 * time.Millisecond
	}
	tick := time.NewTicker(debounce)
	defer tick.Stop()
	// A write under way when ctx ends is finished, not cut: cut, it failed
	// with the trace taken as handled, and the last flush had nothing left
	// to write (a run posted just before a stop was sometimes lost).
	write := context.WithoutCancel(ctx)
	for {
		select {
		case <-ctx.Done():
			l.Flush(write, true)
			return
		case <-tick.C:
		case <-kick:
		}
		l.Flush(write, false)
	}
}

// Flush writes the traces that changed; all of them when force (or when
// Consume was busy), else only those not written within the last Debounce
// (or ten times their last write's cost, so a big growing trace is not
// rewritten without pause) and those idle past OpenIdle, which are let go
// once written.
func (l *Live) Flush(ctx context.Context, force bool) {
	now := l.now()
	debounce := l.Debounce
	if debounce <= 0 {
		debounce = 250 * time.Millisecond
	}
	_, open := l.idle()
	l.mu.Lock()
	l.init()
	force = force || l.pressure
	l.pressure = false
	var due []*liveTrace
	var ids []string
	for id, lt := range l.traces {
		if !lt.dirty {
			continue
		}
		wait := debounce
		if c := 10 * lt.cost; c > wait {
			wait = c
		}
		if force || now.Sub(lt.written) >= wait || now.Sub(lt.seen) > open {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		lt := l.traces[id]
		lt.dirty = false
		due = append(due, lt)
	}
	// Build under the lock (spans are appended by Consume), write outside it.
	type job struct {
		lt    *liveTrace
		s     *importers.Session
		spans int
		ended bool
	}
	var jobs []job
	for _, lt := range due {
		s := Build(lt.t, l.Options)
		s.Source.Path = l.Source
		jobs = append(jobs, job{lt, s, lt.t.Len(), lt.t.Ended()})
	}
	done := l.evict(now)
	l.mu.Unlock()
	l.forget(ctx, done)

	for _, j := range jobs {
		start := l.now()
		id, err := l.Write(ctx, j.s)
		end := l.now()
		l.mu.Lock()
		j.lt.cost, j.lt.written = end.Sub(start), end
		if err != nil {
			j.lt.dirty = true // try again
			l.mu.Unlock()
			if l.OnError != nil {
				l.OnError(j.s.Source.ID, err)
			}
			continue
		}
		j.lt.runID = id
		first := !j.lt.announced
		j.lt.announced = true
		endNow := j.ended && !j.lt.endTold
		if endNow {
			j.lt.endTold = true
		}
		l.mu.Unlock()
		if l.OnRun != nil && (first || endNow) {
			l.OnRun(id, j.s, j.spans, j.ended)
		}
	}
	l.mu.Lock()
	done = l.evict(l.now()) // what was idle is written now
	l.mu.Unlock()
	l.forget(ctx, done)
}

// forget drops the kept spans of the traces done. A failure leaves them
// kept (a later span of the trace then merges into its run): said, not
// fatal.
func (l *Live) forget(ctx context.Context, done []string) {
	for _, id := range done {
		if err := l.Spans.DropSpans(ctx, id); err != nil && l.OnError != nil {
			l.OnError(id, fmt.Errorf("drop the spans kept: %w", err))
		}
	}
}

// Stats are how many traces Live holds and has let go (a trace let go and
// taken up again counts each time), and how many bytes of spans it holds.
func (l *Live) Stats() (open, closed int, bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.traces), l.let, l.held
}

// redactSpans returns copies of spans whose texts are redacted (DESIGN
// §11, Secrets), as the store keeps them: names, status messages, every
// string attribute (as JSON when it is JSON) and event.
func redactSpans(spans []*otel.Span) []*otel.Span {
	var r *secret.Redactor // the rules: a receiver knows no key
	text := func(s string) string {
		if s == "" {
			return s
		}
		return string(r.JSON([]byte(s), nil))
	}
	var value func(v any) any
	value = func(v any) any {
		switch x := v.(type) {
		case string:
			return text(x)
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = value(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = value(e)
			}
			return out
		}
		return v
	}
	attrs := func(a otel.Attrs) otel.Attrs {
		if a == nil {
			return nil
		}
		out := make(otel.Attrs, len(a))
		for k, v := range a {
			out[k] = value(v)
		}
		return out
	}
	out := make([]*otel.Span, len(spans))
	for i, s := range spans {
		c := *s
		c.Name, c.StatusMessage, c.Attrs = text(s.Name), text(s.StatusMessage), attrs(s.Attrs)
		if len(s.Events) > 0 {
			c.Events = make([]otel.Event, len(s.Events))
			for k, e := range s.Events {
				c.Events[k] = otel.Event{Name: text(e.Name), Time: e.Time, Attrs: attrs(e.Attrs)}
			}
		}
		out[i] = &c
	}
	return out
}
