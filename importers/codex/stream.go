package codex

import (
	"context"
	"fmt"
	"os"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// maxHeld bounds the steps a thread holds back behind a call whose output
// has not come yet. Past it the oldest is handed over as it is, so memory
// stays bounded whatever the file; only a rollout that keeps a call open
// across this many later steps records another run than its whole tree.
const maxHeld = 2000

// A rollout is read twice, each pass a line at a time. The first
// (readThread) keeps no step: it learns the thread's outcome, its tasks
// and models, every spawn_agent call and fork whole (a branch's outcome,
// answer and join come in lines long after the fork), and which calls
// never get an output; the sub-agents' rollouts are matched to the calls
// then. The second (thread) reads the steps again and hands each over once
// no later line can change it — a response once the next began, a call
// once its output came (or the first pass said none comes) — the forks as
// the first pass left them, each branch a thread of its own read when
// Write comes to it. What stays in memory is the first pass's forks and
// calls, the user turns, and the steps held behind an open call.

// thread is the second pass over one rollout (importers.StepReader).
type thread struct {
	ctx   context.Context
	tree  *threads
	first *reader // the first pass over the same file
	r     *reader // this pass
	f     *os.File
	lr    *importers.LineReader
	forks int  // forks handed over
	lazy  bool // the first pass's forks get their branches as they are handed over (the trunk's)
	eof   bool
	ended bool
	end   func() // once every step was handed over
}

// threads is what the threads of one session share.
type threads struct {
	idx    *index
	opt    importers.Options
	report *importers.Report
	seen   map[string]bool
	models *[]string
	open   map[*thread]bool // threads whose file is open
}

func (t *threads) newThread(ctx context.Context, first *reader, lazy bool) *thread {
	r := &reader{path: first.path, opt: first.opt, report: &importers.Report{}, conv: &importers.Conversation{Agent: "main"},
		open: map[string]*call{}, keep: true}
	return &thread{ctx: ctx, tree: t, first: first, r: r, lazy: lazy}
}

// Next hands over the thread's next settled step.
func (th *thread) Next() (importers.Step, bool, error) {
	for {
		st, ok, err := th.take()
		if err != nil || ok {
			return st, ok, err
		}
		if th.eof {
			if !th.ended {
				th.ended = true
				if th.end != nil {
					th.end()
				}
				// Its branch keeps the conversation (and so this thread)
				// to the session's end: what the passes held goes now.
				th.first, th.r, th.lr = nil, nil, nil
			}
			return importers.Step{}, false, nil
		}
		if th.f == nil {
			f, err := importers.OpenRegular(th.r.path)
			if err != nil {
				return importers.Step{}, false, err
			}
			th.f, th.lr = f, importers.NewLineReader(f)
			th.tree.open[th] = true
		}
		done, err := th.r.readSome(th.ctx, th.lr, th.first.lines)
		if err != nil {
			th.close()
			return importers.Step{}, false, err
		}
		if done {
			th.close()
			th.eof = true
			if th.r.meta != nil {
				th.r.finish()
			}
		}
	}
}

func (th *thread) close() {
	if th.f != nil {
		th.f.Close()
		th.f = nil
		delete(th.tree.open, th)
	}
}

// take hands over the oldest step held once no later line can change it.
func (th *thread) take() (importers.Step, bool, error) {
	r := th.r
	if r == nil {
		return importers.Step{}, false, nil
	}
	steps := r.conv.Steps
	if len(steps) == 0 {
		return importers.Step{}, false, nil
	}
	st := steps[0]
	if !th.eof && len(steps) <= maxHeld && !th.settled(st) {
		return importers.Step{}, false, nil
	}
	steps[0] = importers.Step{}
	r.conv.Steps = steps[1:]
	if len(r.conv.Steps) == 0 {
		r.conv.Steps = nil
	}
	if st.Fork != nil {
		if th.forks >= len(th.first.forks) {
			return importers.Step{}, false, fmt.Errorf("%s changed while it was read: more spawn_agent calls than before", r.path)
		}
		st.Fork = th.first.forks[th.forks]
		th.first.forks[th.forks] = nil
		th.forks++
		if th.lazy {
			if err := attachFork(th.ctx, th.first, th.tree, st.Fork, 1); err != nil {
				return importers.Step{}, false, err
			}
		}
	}
	return st, true, nil
}

// settled reports whether no later line changes st: a response once the
// next one began (a compaction names the one that wrote it; a session's
// end, the one still open), a call once its output came or when the first
// pass found it never does.
func (th *thread) settled(st importers.Step) bool {
	r := th.r
	switch {
	case st.LLM != nil:
		return st.LLM != r.lastLLM
	case st.Tool != nil:
		c := r.open[st.Tool.CallID]
		if c == nil || c.tool != st.Tool {
			return true
		}
		if th.first.unanswered[c.seq] && c.spawn == nil && !c.wait {
			st.Tool.Status, st.Tool.Error = record.StatusInterrupted, noOutput
			return true
		}
		return false
	}
	return true
}
