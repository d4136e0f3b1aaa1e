package otlp

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/otel"
)

// Live records traces as their spans arrive at a receiver (inspect
// collect): Consume takes each export request's spans, Run writes every
// trace that changed as a run (again and again as it grows: a re-import of
// the same trace id updates its run) until its context ends, then flushes.
// Memory is bounded: a trace that has ended and was written is let go
// after Idle, and when MaxSpans are held Consume answers otel.ErrBusy
// (the exporter retries). Spans for a trace already let go are rejected,
// counted in the OTLP answer: its run stays as it was.
type Live struct {
	// Write records a session and returns its run id (importers.Write on
	// the store).
	Write func(ctx context.Context, s *importers.Session) (string, error)
	// OnRun is told of each run the first time it is written and when its
	// trace has ended; may be nil.
	OnRun func(runID string, s *importers.Session, spans int, ended bool)
	// OnError is told of a failed write (the trace is tried again); may be nil.
	OnError  func(traceID string, err error)
	Options  importers.Options
	Source   string        // the Source.Path of the runs (the listen URL)
	Debounce time.Duration // the least time between two writes of one trace; 0 = 250ms
	Idle     time.Duration // how long an ended, written trace is kept; 0 = 30s
	MaxSpans int           // spans held in memory at most; 0 = 1,000,000
	// Now is the clock Debounce and Idle are measured by (nil = time.Now);
	// tests move it instead of sleeping.
	Now func() time.Time

	mu     sync.Mutex
	traces map[string]*liveTrace
	closed map[string]string // trace id -> run id, of traces let go
	held   int
	kick   chan struct{}
}

type liveTrace struct {
	t         *Trace
	runID     string
	dirty     bool
	seen      time.Time // last span arrival
	written   time.Time
	cost      time.Duration // the last write's duration
	announced bool          // OnRun told of its first write
	endTold   bool          // OnRun told it ended
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
		l.closed = map[string]string{}
		l.kick = make(chan struct{}, 1)
	}
}

// Consume implements otel.Consumer.
func (l *Live) Consume(ctx context.Context, spans []*otel.Span) (int, string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.init()
	max := l.MaxSpans
	if max <= 0 {
		max = 1_000_000
	}
	if l.held+len(spans) > max {
		l.evict(l.now(), true)
		if l.held+len(spans) > max {
			return 0, "", otel.ErrBusy
		}
	}
	now := l.now()
	late := 0
	for _, s := range spans {
		key := RunKey(s)
		if _, gone := l.closed[key]; gone {
			late++
			continue
		}
		lt := l.traces[key]
		if lt == nil {
			lt = &liveTrace{t: NewTrace(key)}
			l.traces[key] = lt
		}
		before := lt.t.Len()
		lt.t.Add(s)
		l.held += lt.t.Len() - before
		lt.dirty, lt.seen = true, now
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
	if late > 0 {
		return late, fmt.Sprintf("%d spans of traces already recorded and closed", late), nil
	}
	return 0, "", nil
}

// evict lets go of the traces that ended, were written and are clean:
// those idle past Idle, or every such one when force.
func (l *Live) evict(now time.Time, force bool) {
	idle := l.Idle
	if idle <= 0 {
		idle = 30 * time.Second
	}
	for id, lt := range l.traces {
		if lt.dirty || lt.runID == "" || !lt.t.Ended() {
			continue
		}
		if force || now.Sub(lt.seen) > idle {
			l.closed[id] = lt.runID
			l.held -= lt.t.Len()
			delete(l.traces, id)
		}
	}
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
	for {
		select {
		case <-ctx.Done():
			l.Flush(context.WithoutCancel(ctx), true)
			return
		case <-tick.C:
		case <-kick:
		}
		l.Flush(ctx, false)
	}
}

// Flush writes the traces that changed; all of them when force, else only
// those not written within the last Debounce (or ten times their last
// write's cost, so a big growing trace is not rewritten without pause).
func (l *Live) Flush(ctx context.Context, force bool) {
	now := l.now()
	debounce := l.Debounce
	if debounce <= 0 {
		debounce = 250 * time.Millisecond
	}
	l.mu.Lock()
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
		if force || now.Sub(lt.written) >= wait {
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
	l.evict(now, false)
	l.mu.Unlock()

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
}

// Stats are how many traces Live holds and has let go, and how many spans
// it holds.
func (l *Live) Stats() (open, closed, spans int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.traces), len(l.closed), l.held
}
