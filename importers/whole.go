package importers

import (
	"context"
	"fmt"
	"sync"
)

// Wholes is the second pass over a file of many runs whose records may
// interleave (OTLP spans, Agents SDK spans): a goroutine reads the file
// (read) and emits each run whole once its last record has come — the
// first pass counted them — and the session being written takes its own
// (Take), holding the runs that came before their turn. Memory so follows
// the runs open at once in the file, not the file. Each session's Close
// calls Done; the last stops the reading.
type Wholes[T any] struct {
	read   func(ctx context.Context, emit func(key string, v T) error) error
	ctx    context.Context
	cancel context.CancelFunc
	ch     chan keyed[T]
	errc   chan error
	held   map[string]T
	ended  bool
	err    error
	start  sync.Once
	mu     sync.Mutex
	left   int
}

type keyed[T any] struct {
	key string
	v   T
}

// NewWholes returns the second pass of sessions sessions; read runs (in a
// goroutine, at the first Take) until it returns or its context ends.
func NewWholes[T any](ctx context.Context, sessions int, read func(ctx context.Context, emit func(key string, v T) error) error) *Wholes[T] {
	w := &Wholes[T]{read: read, held: map[string]T{}, left: sessions}
	w.ctx, w.cancel = context.WithCancel(ctx)
	return w
}

func (w *Wholes[T]) run() {
	w.ch, w.errc = make(chan keyed[T]), make(chan error, 1)
	go func() {
		defer close(w.ch)
		w.errc <- w.read(w.ctx, func(key string, v T) error {
			select {
			case w.ch <- keyed[T]{key, v}:
				return nil
			case <-w.ctx.Done():
				return w.ctx.Err()
			}
		})
	}()
}

// Take returns run key whole, no longer held; false when the file ended
// without it (it changed since the first pass).
func (w *Wholes[T]) Take(key string) (T, bool, error) {
	w.start.Do(w.run)
	for {
		if v, ok := w.held[key]; ok {
			delete(w.held, key)
			return v, true, nil
		}
		if w.ended {
			var zero T
			return zero, false, w.err
		}
		kv, ok := <-w.ch
		if !ok {
			w.ended = true
			if err := <-w.errc; err != nil && w.ctx.Err() == nil {
				w.err = err
			}
			continue
		}
		w.held[kv.key] = kv.v
	}
}

// Done is one session's Close: the last one stops the reading.
func (w *Wholes[T]) Done() {
	w.mu.Lock()
	w.left--
	last := w.left == 0
	w.mu.Unlock()
	if !last {
		return
	}
	w.cancel()
	if w.ch != nil {
		for range w.ch {
		}
	}
}

// BuiltLater makes s, a session of which only Source is known yet, one
// whose trunk is built whole when Write first reads it: build returns the
// session as a Format's Read gives it; s takes all it says (Source's Path
// and s.Close kept), and its trunk hands the built trunk's steps over one
// by one. A run mapped from records that come in any order (spans) is
// built so once its records are in, one run at a time.
func BuiltLater(s *Session, build func() (*Session, error)) {
	s.Trunk = &Conversation{}
	s.Trunk.Live = &builtLater{s: s, build: build}
}

type builtLater struct {
	s     *Session
	build func() (*Session, error)
	steps []Step
	built bool
}

func (b *builtLater) Next() (Step, bool, error) {
	if !b.built {
		b.built = true
		got, err := b.build()
		if err != nil {
			return Step{}, false, err
		}
		if got == nil {
			return Step{}, false, fmt.Errorf("%s session %s: nothing to build", b.s.Source.Format, b.s.Source.ID)
		}
		b.fill(got)
	}
	if len(b.steps) == 0 {
		return Step{}, false, nil
	}
	st := b.steps[0]
	b.steps[0] = Step{}
	b.steps = b.steps[1:]
	return st, true, nil
}

// fill gives the session and its trunk what got, the session built
// whole, says — as Write reads a whole tree (a trunk's start is its first
// step with a time when the session says none).
func (b *builtLater) fill(got *Session) {
	s, c := b.s, b.s.Trunk
	path, closeFn, live := s.Source.Path, s.Close, c.Live
	bt := got.Trunk
	if bt == nil {
		bt = &Conversation{}
	}
	*s = *got
	if path != "" {
		s.Source.Path = path
	}
	s.Trunk, s.Close = c, closeFn
	b.steps = bt.Steps
	*c = *bt
	c.Steps, c.Live = nil, live
	if s.Started.IsZero() && c.Started.IsZero() {
		s.Started = firstTime(bt)
	}
}
