package kimicode

import (
	"errors"
	"fmt"
	"io"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/internal/kimi"
)

// Every journal is read twice, a line at a time. The first pass (agent)
// is the whole read of the session, depth-first as the sub-agents were
// started, keeping no step: each agent's conversation's facts (its times,
// outcome, system prompt and tools), its forks whole (a branch's outcome
// and the sub-agent a call ran come in records long after the fork, or in
// state.json), the forks of sub-agents no call names, and what it reports.
// The second (stream) reads each journal again when Write comes to its
// conversation and hands each step over once no later line can change it,
// the forks as the first pass left them. What stays in memory is the
// first pass's forks and branches, and the steps held behind an open call.

// maxHeld bounds the steps a conversation holds back behind a call whose
// result has not come. Past it the oldest is handed over as it is (an
// open call reads interrupted, as at the journal's end), so memory stays
// bounded whatever the journal; only a session that keeps a call open
// across this many later steps records another run than its whole tree.
const maxHeld = 2000

// stream is the second pass over one agent's journal (the turns of its
// window): importers.StepReader.
type stream struct {
	r        *reader    // the session's reader
	plan     *agentFile // the first pass's
	a        *agentFile // this pass's
	j        *kimi.Journal
	inWindow bool
	eof      bool
	finished bool
	forks    int    // forks handed over
	handed   int    // steps handed over, the placed forks included
	drop     bool   // the first step is the prompt the call gave (the branch's instructions)
	model    string // for its responses that name none (the task's)
}

// live is the conversation of agent a as the first pass found it, its
// steps to come from a second pass; model names the responses that name
// none.
func (r *reader) live(a *agentFile, model string) *importers.Conversation {
	c := a.conv
	st := &stream{r: r, plan: a, inWindow: a.w.Zero(), model: model}
	c.Live = st
	return &c
}

// before reports whether the fork of a sub-agent no call names goes before
// step st: st started after it.
func before(f *importers.Fork, st importers.Step) bool {
	at := st.At()
	return !at.IsZero() && at.After(f.At)
}

// asBranch makes the conversation a branch's (events.AsBranch): its first
// step, when a user turn and no fork of a sub-agent no call names goes
// before it, is the parent's prompt, which it returns (the branch's
// instructions), and is not handed over.
func (s *stream) asBranch() string {
	a := s.plan
	if a.steps == 0 || a.first.User == nil || len(a.orphans) > 0 && before(a.orphans[0], a.first) {
		return ""
	}
	s.drop = true
	return a.first.User.Text
}

// quietReader is the reader of the second pass: the first reported what
// the journals hold, so it reports nothing and keeps no session facts.
func (r *reader) quietReader() *reader {
	if r.quiet == nil {
		opt := r.opt
		opt.Strict = false
		q := &reader{ctx: r.ctx, dir: r.dir, opt: opt, sess: &importers.Session{}, models: map[string]bool{}, state: r.state}
		q.log = kimi.NewLog(&q.sess.Report, opt, r.dir)
		r.quiet = q
	}
	return r.quiet
}

// close closes the journals still open (an import that stopped).
func (r *reader) close() {
	for j := range r.open {
		j.Close()
	}
	clear(r.open)
}

func (s *stream) close() {
	if s.j != nil {
		s.j.Close()
		delete(s.r.open, s.j)
		s.j = nil
	}
	s.eof = true
}

// Next hands over the conversation's next settled step.
func (s *stream) Next() (importers.Step, bool, error) {
	if s.plan == nil {
		return importers.Step{}, false, nil
	}
	for {
		if s.eof && !s.finished {
			s.finished = true
			if s.a != nil {
				s.a.b.Finish()
			}
		}
		st, ok, err := s.take()
		if err != nil || ok {
			return st, ok, err
		}
		if s.eof {
			if s.forks < len(s.plan.forks) {
				return importers.Step{}, false, fmt.Errorf("%s changed while it was read: fewer delegation calls than before", s.plan.path)
			}
			s.plan, s.a = nil, nil // all handed over
			return importers.Step{}, false, nil
		}
		if err := s.line(); err != nil {
			s.close()
			return importers.Step{}, false, err
		}
	}
}

// line reads and applies the journal's next line, opening it first.
func (s *stream) line() error {
	q := s.r.quietReader()
	if s.a == nil {
		s.a = newAgentFile(s.plan.id, s.plan.path, s.plan.w, s.plan.name, q.newBuilder(s.plan.name))
		if s.plan.id != "main" && !importers.IsFileIn(s.r.dir, s.plan.path) {
			s.eof = true
			return nil
		}
		j, err := q.log.Open(s.r.ctx, s.plan.path)
		if err != nil {
			return err
		}
		s.j = j
		s.r.open[j] = true
	}
	n, raw, unterminated, err := s.j.Next()
	if errors.Is(err, io.EOF) {
		s.close()
		return nil
	}
	if err != nil {
		return err
	}
	err = q.line(s.plan.path, s.a, s.plan.w, &s.inWindow, n, raw, unterminated)
	// What only the first pass needs goes: the second keeps nothing of it.
	q.sess.Report, q.named = importers.Report{}, nil
	if len(s.a.started)+len(s.a.terminated) > 0 {
		clear(s.a.started)
		clear(s.a.terminated)
	}
	return err
}

// take hands over the oldest step held once no later line can change it:
// it is settled and not the latest (a compaction may still go before
// that one), or the journal has ended. A fork is the first pass's, with
// its branches; the forks of sub-agents no call names go before the first
// step that started after them.
func (s *stream) take() (importers.Step, bool, error) {
	for {
		var steps []importers.Step
		if s.a != nil {
			steps = s.a.b.Conv.Steps
		}
		n := len(steps)
		if o := s.plan.orphans; len(o) > 0 && (s.eof && n == 0 || (s.eof || n > 1) && n > 0 && before(o[0], steps[0])) {
			f := o[0]
			o[0] = nil
			s.plan.orphans = o[1:]
			if s.handed++; s.handed == 1 && s.drop {
				continue
			}
			return importers.Step{Fork: f}, true, nil
		}
		if n == 0 {
			return importers.Step{}, false, nil
		}
		st := steps[0]
		if !s.eof && n <= maxHeld && (n < 2 || !s.a.b.Settled(st)) {
			return importers.Step{}, false, nil
		}
		steps[0] = importers.Step{}
		s.a.b.Conv.Steps = steps[1:]
		if len(s.a.b.Conv.Steps) == 0 {
			s.a.b.Conv.Steps = nil
		}
		s.a.b.HandOver(st)
		switch {
		case st.User != nil:
			delete(s.a.userTurns, st.User)
		case st.LLM != nil && st.LLM.Model == "":
			st.LLM.Model = s.model
		case st.Fork != nil:
			if s.forks >= len(s.plan.forks) {
				return importers.Step{}, false, fmt.Errorf("%s changed while it was read: more delegation calls than before", s.plan.path)
			}
			st.Fork = s.plan.forks[s.forks]
			s.plan.forks[s.forks] = nil
			s.forks++
		}
		if s.handed++; s.handed == 1 && s.drop {
			continue
		}
		return st, true, nil
	}
}
