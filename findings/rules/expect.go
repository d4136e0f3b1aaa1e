package rules

import (
	"fmt"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
)

// verdict is Shown when ok, else NotShown, with a formatted detail.
func verdict(ok bool, format string, args ...any) findings.Verdict {
	v := findings.Verdict{Result: findings.NotShown, Detail: fmt.Sprintf(format, args...)}
	if ok {
		v.Result = findings.Shown
	}
	return v
}

// expectWith adapts a check that reads a rule's promise, the facts of type
// P its Run stored in Finding.Promise, to Rule.Expect.
func expectWith[P any](check func(p P, f findings.Finding, next *graph.Run) findings.Verdict) func(findings.Finding, *graph.Run) findings.Verdict {
	return func(f findings.Finding, next *graph.Run) findings.Verdict {
		p, ok := f.Promise.(P)
		if !ok {
			return findings.Verdict{Result: findings.NotChecked, Detail: "the finding carries none of the facts its check reads (was it read back from a file?)"}
		}
		return check(p, f, next)
	}
}

// forksBy returns the forks agent made in g, in sequence order.
func forksBy(g *graph.Run, agent string) []*graph.Fork {
	var out []*graph.Fork
	for _, f := range g.Forks {
		if forkingAgent(f) == agent {
			out = append(out, f)
		}
	}
	return out
}
