package kimicli

import (
	"errors"
	"io"
	"slices"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/events"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
)

// maxHeld bounds the steps a conversation holds back while an earlier one
// is still open (a call whose result has not come, a fork whose calls are
// out). Past it the oldest is handed over as it is (an open call reads
// interrupted, as at the journal's end), so that memory stays bounded even
// when a call never gets its result; only a session that keeps a call open
// across this many later steps records another run than its whole tree.
const maxHeld = 2000

// wire reads one journal into a builder and hands its conversation's steps
// over in order, each once settled (importers.StepReader).
type wire struct {
	r        *reader
	b        *events.Builder
	c        *importers.Conversation // the conversation handed out (c.Live is this)
	j        *kimi.Journal           // nil once read to its end
	path     string
	w        kimi.Window
	inWindow bool
	trunk    bool
	n        int // the number of the latest line read

	start     time.Time // a branch's call: its conversation starts no later
	model     string    // a branch's model, for its responses that name none
	dropFirst bool      // a branch's first step is the prompt its call gave (its instructions)
	handed    int       // steps handed over
	tasks     []string  // the trunk's user turns handed over

	eof, finished, ended bool
	atEOF                func() // once the journal is read and its builder finished
	end                  func() // once every step was handed over
}

func (r *reader) openWire(path string, b *events.Builder, w kimi.Window, trunk bool) (*wire, error) {
	j, err := r.log.Open(r.ctx, path)
	if err != nil {
		return nil, err
	}
	r.open = append(r.open, j)
	return &wire{r: r, b: b, j: j, path: path, w: w, inWindow: w.Zero(), trunk: trunk}, nil
}

// close closes the journals still open (an import that stopped).
func (r *reader) close() {
	for _, j := range r.open {
		j.Close()
	}
	r.open = nil
}

func (w *wire) close() {
	if w.j != nil {
		w.j.Close()
		w.r.open = slices.DeleteFunc(w.r.open, func(j *kimi.Journal) bool { return j == w.j })
		w.j = nil
	}
	w.eof = true
}

// line reads and applies the journal's next line.
func (w *wire) line() error {
	n, raw, unterminated, err := w.j.Next()
	if errors.Is(err, io.EOF) {
		w.close()
		return nil
	}
	if err != nil {
		w.close()
		return err
	}
	w.n = n
	return w.r.record(w.path, w.b, w.w, &w.inWindow, w.trunk, n, raw, unterminated)
}

// Next hands over the conversation's next settled step.
func (w *wire) Next() (importers.Step, bool, error) {
	for {
		if w.eof && !w.finished {
			w.finished = true
			w.b.Finish()
			if w.atEOF != nil {
				w.atEOF()
			}
		}
		st, ok, err := w.take()
		if err != nil {
			return st, false, err
		}
		if ok {
			w.sync()
			return st, true, nil
		}
		if w.eof {
			w.sync()
			if !w.ended {
				w.ended = true
				if w.end != nil {
					w.end()
				}
			}
			return importers.Step{}, false, nil
		}
		if err := w.line(); err != nil {
			return importers.Step{}, false, err
		}
	}
}

// sync gives the handed-out conversation what the builder knows of it.
func (w *wire) sync() {
	bc := w.b.Conv
	w.c.Started = bc.Started
	if !w.start.IsZero() && (w.c.Started.IsZero() || w.start.Before(w.c.Started)) {
		w.c.Started = w.start
	}
	if w.trunk && w.eof {
		w.c.Ended, w.c.Status, w.c.Error = bc.Ended, bc.Status, bc.Error
	}
}

// peek reads until the conversation has a step (or its journal ends) and
// returns the first one, not handing it over.
func (w *wire) peek() (importers.Step, error) {
	for len(w.b.Conv.Steps) == 0 && !w.eof {
		if err := w.line(); err != nil {
			return importers.Step{}, err
		}
	}
	if len(w.b.Conv.Steps) == 0 {
		return importers.Step{}, nil
	}
	return w.b.Conv.Steps[0], nil
}

// take hands over the oldest step held when it can no longer change: it
// is settled, it is not the latest (a compaction may still go before that
// one), and a fork's calls have come back (the first pass says after which
// line nothing more changes them). The trunk's sub-agents no call names go
// before the first step that started after them.
func (w *wire) take() (importers.Step, bool, error) {
	steps := w.b.Conv.Steps
	if w.trunk && len(w.r.orphan) > 0 {
		if o := w.r.orphan[0]; len(steps) == 0 && w.eof || len(steps) > 0 && !steps[0].At().IsZero() && steps[0].At().After(o.At) {
			w.r.orphan = w.r.orphan[1:]
			return importers.Step{Fork: o}, true, nil
		}
	}
	n := len(steps)
	if n == 0 {
		return importers.Step{}, false, nil
	}
	st := steps[0]
	if !w.eof && n <= maxHeld {
		if n < 2 || !w.b.Settled(st) {
			return importers.Step{}, false, nil
		}
		if st.Fork != nil && w.trunk {
			for i, d := range w.b.Delegations {
				if d.Fork == st.Fork && w.n < w.r.scan.calls[w.r.taken+i].last {
					return importers.Step{}, false, nil
				}
			}
		}
	}
	steps[0] = importers.Step{}
	w.b.Conv.Steps = steps[1:]
	if len(w.b.Conv.Steps) == 0 {
		w.b.Conv.Steps = nil
	}
	dels := w.b.HandOver(st)
	w.handed++
	if w.dropFirst && w.handed == 1 && st.User != nil {
		return w.take()
	}
	switch {
	case st.User != nil && w.trunk && st.User.Text != "":
		w.tasks = append(w.tasks, st.User.Text)
	case st.LLM != nil && st.LLM.Model == "":
		st.LLM.Model = w.model
	case st.Fork != nil && w.trunk:
		if err := w.r.release(st.Fork, dels); err != nil {
			return importers.Step{}, false, err
		}
	}
	return st, true, nil
}
