package importerstest

import (
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// Replay returns s as a streaming format hands it over: every conversation
// Live, giving its steps one at a time, its Started only once its first
// step has been asked for and its Ended, Status and Error only at its end,
// and the session's fields but Source only once the trunk has ended. A
// mapping that records a replayed session as it records s reads nothing
// before a reader could know it. s is not changed.
func Replay(s *importers.Session) *importers.Session {
	out := &importers.Session{Source: s.Source}
	rest := *s
	out.Trunk = replay(s.Trunk, func() {
		trunk := out.Trunk
		*out = rest
		out.Trunk = trunk
	})
	return out
}

type replayer struct {
	c      *importers.Conversation // the one the mapping reads
	steps  []importers.Step
	i      int
	start  time.Time
	ended  time.Time
	status record.Status
	err    string
	done   func()
}

func replay(c *importers.Conversation, done func()) *importers.Conversation {
	if c == nil {
		if done != nil {
			done()
		}
		return nil
	}
	live := &importers.Conversation{Agent: c.Agent, System: c.System, Tools: c.Tools}
	live.Live = &replayer{c: live, steps: c.Steps, start: c.Started, ended: c.Ended, status: c.Status, err: c.Error, done: done}
	return live
}

func (r *replayer) Next() (importers.Step, bool, error) {
	r.c.Started = r.start
	if r.i == len(r.steps) {
		r.c.Ended, r.c.Status, r.c.Error = r.ended, r.status, r.err
		if r.done != nil {
			r.done()
			r.done = nil
		}
		return importers.Step{}, false, nil
	}
	st := r.steps[r.i]
	r.i++
	if f := st.Fork; f != nil {
		ff := *f
		ff.Branches = make([]*importers.Branch, len(f.Branches))
		for i, b := range f.Branches {
			bb := *b
			bb.Conv = replay(b.Conv, nil)
			ff.Branches[i] = &bb
		}
		st.Fork = &ff
	}
	return st, true, nil
}
