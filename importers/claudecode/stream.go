package claudecode

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
)

// maxHeld bounds the steps a conversation holds back while an earlier one
// is still open (a call whose result has not come, a fork whose branches
// are out). Past it the oldest is handed over as it is — a result that
// comes later is dropped — so that memory stays bounded even when a call
// never gets its result; a session that keeps a call open across this many
// later steps is the only one whose run differs from the whole tree's.
const maxHeld = 2000

// stream reads one conversation's file (or an inline sidechain already
// read) line by line and hands its steps over in order, each once settled
// (importers.StepReader).
type stream struct {
	r     *reader
	cv    *conv
	f     *os.File // nil: every line is in (an inline sidechain), or the file could not be opened
	lr    *importers.LineReader
	path  string
	depth int // 1 for the session's own conversation, one more for each sub-agent level

	seen       ids      // the lines' uuids (resumed sessions repeat lines)
	trunk      bool     // the session's own file
	first      bool     // no user or assistant line yet
	standalone string   // the sub-agent's id when the session's file is a sub-agent's own
	promptDone bool     // a standalone sub-agent's instructions were handed over as its first turn
	task       *task    // the delegation call whose branch this is, for its outcome
	mirror     bool     // a branch read from its parent's records (agent_progress, the call's result), its own file not there
	tasks      []string // the trunk's user turns handed over
	eof        bool
	finished   bool // cv.finish ran
	ended      bool
	end        func() // called once every step was handed over
}

func (r *reader) newStream(cv *conv, f *os.File, path string, depth int) *stream {
	st := &stream{r: r, cv: cv, f: f, path: path, depth: depth, seen: ids{}, first: true, eof: f == nil}
	if f != nil {
		st.lr = importers.NewLineReader(f)
	}
	return st
}

// Next hands over the conversation's next settled step (importers.StepReader).
func (s *stream) Next() (importers.Step, bool, error) {
	for {
		if s.eof && !s.finished {
			s.finished = true
			if s.task != nil && s.mirror {
				s.cv.finalFromParent(s.task)
			}
			s.cv.finish()
			if s.task != nil {
				outcome(s.task, s.cv, s.mirror)
			}
		}
		if st, ok := s.take(); ok {
			return st, true, nil
		}
		if s.eof {
			if !s.ended {
				s.ended = true
				if s.end != nil {
					s.end()
				}
			}
			return importers.Step{}, false, nil
		}
		if err := s.line(); err != nil {
			if s.trunk {
				return importers.Step{}, false, err
			}
			// A sub-agent's file that cannot be read to its end is what
			// was read of it, with the reason as a problem.
			s.r.rep.Problem(importers.Options{}, s.path, 0, err)
			s.close()
		}
	}
}

// take hands over the oldest step the conversation holds, when it is
// settled and cannot be the step later lines change (the latest one; in a
// sub-agent, its last response, which the parent's record may correct).
func (s *stream) take() (importers.Step, bool) {
	cv := s.cv
	if s.standalone != "" && !s.promptDone {
		if !cv.sawPrompt && !s.eof {
			return importers.Step{}, false
		}
		s.promptDone = true
		if cv.prompt != "" { // its instructions are the run's first task
			cv.steps = append([]importers.Step{{User: &importers.User{At: cv.c.Started, Text: cv.opt.Clip(cv.prompt)}}}, cv.steps...)
		}
	}
	n := len(cv.steps)
	if n == 0 {
		return importers.Step{}, false
	}
	if !s.eof && n <= maxHeld {
		limit := n - 1
		if s.depth > 1 && cv.lastLLM != nil {
			for i := n - 1; i >= 0; i-- {
				if cv.steps[i].LLM == cv.lastLLM {
					limit = min(limit, i)
					break
				}
			}
		}
		if limit <= 0 || !cv.settled(cv.steps[0]) {
			return importers.Step{}, false
		}
	}
	st := cv.steps[0]
	if c := st.Compact; c != nil && s.trunk && len(s.r.compactions) > 0 {
		if calls := s.r.compactionCalls(c.At); len(calls) > 0 {
			cv.steps = append(calls, cv.steps...)
			st = cv.steps[0]
		}
	}
	cv.steps[0] = importers.Step{}
	cv.steps = cv.steps[1:]
	if len(cv.steps) == 0 {
		cv.steps = nil // let the array go
	}
	cv.handedOver(st)
	switch {
	case st.User != nil && s.trunk:
		s.tasks = append(s.tasks, st.User.Text)
	case st.Fork != nil:
		tasks := cv.forkTasks(st.Fork)
		s.r.name(cv, tasks)
		for _, tk := range tasks {
			tk.branch.Conv = &importers.Conversation{Agent: tk.branch.Agent}
			tk.branch.Conv.Live = &branch{r: s.r, tk: tk, depth: s.depth}
		}
	}
	return st, true
}

// line reads and routes the next line of the file.
func (s *stream) line() error {
	r := s.r
	if err := r.ctx.Err(); err != nil {
		return err
	}
	line, n, unterminated, err := s.lr.Next()
	if errors.Is(err, io.EOF) {
		s.close()
		return nil
	}
	if errors.Is(err, importers.ErrLineTooLong) {
		return r.rep.Problem(r.opt, s.path, n, err)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", s.path, err)
	}
	var e entry
	if err := json.Unmarshal(line, &e); err != nil {
		if unterminated {
			s.close() // the line being written
			return nil
		}
		return r.rep.Problem(r.opt, s.path, n, fmt.Errorf("not a JSON record: %v", err))
	}
	if !knownType(e.Type) {
		r.rep.Skip(strings.Clone(e.Type))
		return nil
	}
	e.keep()
	e.raw = line
	if e.UUID != "" {
		h := hash(e.UUID)
		if _, ok := s.seen[h]; ok {
			return nil // resumed sessions repeat lines
		}
		s.seen[h] = struct{}{}
	}
	if !s.trunk {
		r.route(s.cv, &e)
		return nil
	}
	if s.first && e.IsSidechain && e.AgentID != "" {
		s.standalone, s.cv.sub = e.AgentID, true
	}
	if e.Type == "user" || e.Type == "assistant" {
		s.first = false
	}
	if e.IsSidechain && s.standalone == "" {
		r.sidechain(&e)
		return nil
	}
	r.route(s.cv, &e)
	return nil
}

// readAll reads every line into the conversation, handing nothing over.
func (s *stream) readAll() error {
	for !s.eof {
		if err := s.line(); err != nil {
			s.close()
			return err
		}
	}
	return nil
}

func (s *stream) close() {
	if s.f != nil {
		s.r.closeFile(s.f)
		s.f = nil
	}
	s.eof = true
}

// branch is the conversation of one delegation call's sub-agent, opened
// when it is first read: which transcript is the sub-agent's is decided
// then, in the order the run numbers its branches, as the sub-agents a
// session names are each read once.
type branch struct {
	r      *reader
	tk     *task
	depth  int // the depth of the conversation that made the call
	opened bool
	st     *stream // nil: no transcript of the sub-agent
}

func (b *branch) Next() (importers.Step, bool, error) {
	if !b.opened {
		b.opened = true
		c := b.tk.branch.Conv
		b.st = b.r.openBranch(b.tk, c, b.depth)
		if b.st == nil { // nested past maxDepth
			c.Started, c.Status, c.Error = b.tk.at, record.StatusInterrupted, "sub-agents nested too deep to read"
		}
	}
	if b.st == nil {
		return importers.Step{}, false, nil
	}
	return b.st.Next()
}
