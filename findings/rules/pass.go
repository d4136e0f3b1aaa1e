package rules

import (
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/stack"
)

// pass is what a rule of this package sees: the engine's Pass, with the
// facts the rules share, computed once per audit.
type pass struct {
	*findings.Pass
	shared *sharedFacts
}

// factsKey keys this package's facts in findings.Pass.Memo.
type factsKey struct{}

// run adapts a rule's Run over a *pass to findings.Rule.Run.
func run(f func(p *pass)) func(*findings.Pass) {
	return func(p *findings.Pass) {
		shared := p.Memo(factsKey{}, func() any { return &sharedFacts{} }).(*sharedFacts)
		f(&pass{Pass: p, shared: shared})
	}
}

// laterPass is a pass over a later run for an expectation check: it gives
// the check the rules' own parsed calls, with the default thresholds and
// the profile of the stack the later run came from.
func laterPass(next *graph.Run) *pass {
	return &pass{Pass: &findings.Pass{Graph: next, Project: &findings.Project{}, Profile: stack.For(next.Source)}, shared: &sharedFacts{}}
}

// words is forks words on a stack that forks (our runtime), else
// subAgents, the same said of sub-agents (Task, spawn_agent, an agent as
// a tool): a fix speaks the stack's own words.
func (p *pass) words(forks, subAgents string) string {
	if p.Profile.Has(stack.Fork) {
		return forks
	}
	return subAgents
}

// orNone is s, or "none recorded" for "".
func orNone(s string) string {
	if s == "" {
		return "none recorded"
	}
	return s
}
