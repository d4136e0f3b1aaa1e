package diff

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// expect checks, in the new graph, what fixed finding f (of the base run)
// said the next run should show. Each rule's check reads the structure its
// Next text names; a rule without a structural check says NotChecked.
func expect(f findings.Finding, base, new *graph.Run, opts *findings.Options) Expectation {
	e := Expectation{Next: f.Next}
	set := func(ok bool, detail string, args ...any) {
		e.Result = NotShown
		if ok {
			e.Result = Shown
		}
		e.Detail = fmt.Sprintf(detail, args...)
	}
	ev := evidence(f, base)
	switch f.Rule {
	case "fanout.missed", "fanout.missed.nofork":
		var tools []string
		for _, n := range ev {
			if n.Kind == record.KindTool && n.Tool != nil {
				tools = append(tools, n.Tool.Name)
			}
		}
		k := len(tools)
		best := 0
		for _, fk := range forksBy(new, f.Agent) {
			if len(fk.Branches) < k {
				best = max(best, len(fk.Branches))
				continue
			}
			for _, b := range fk.Branches {
				if callsTool(b.Conv, tools) {
					set(true, "the fork at %s from %s has %d branches (base: %d serial calls), with %s inside the branches",
						fk.Node.ID(), f.Agent, len(fk.Branches), k, strings.Join(uniq(tools), ", "))
					return e
				}
			}
			best = max(best, len(fk.Branches))
		}
		if best == 0 {
			set(false, "no fork from %s in the new run (base: %d serial calls)", f.Agent, k)
		} else {
			set(false, "the widest fork from %s with the calls inside has fewer than %d branches, or its branches make no %s call", f.Agent, k, strings.Join(uniq(tools), ", "))
		}
	case "fork.one-branch":
		forks := forksBy(new, f.Agent)
		for _, fk := range forks {
			if len(fk.Branches) == 1 {
				set(false, "the fork at %s from %s still has one branch", fk.Node.ID(), f.Agent)
				return e
			}
		}
		set(true, "no one-branch fork from %s (%s in the new run)", f.Agent, plural(len(forks), "fork", "forks"))
	case "join.repeat":
		forks := forksBy(new, f.Agent)
		for _, fk := range forks {
			if n := repeatAfterJoin(fk); n != nil {
				set(false, "%s after the join at %s repeats a call a branch made", n.ID(), fk.Join.ID())
				return e
			}
		}
		set(true, "no call after a join repeats a branch's call (%s from %s examined)", plural(len(forks), "fork", "forks"), f.Agent)
	case "branch.failed":
		name := ""
		for _, n := range ev {
			if n.Conv != nil && n.Conv.Branch != nil {
				name = n.Conv.Branch.Name
			}
		}
		if name == "" {
			e.Result, e.Detail = NotChecked, "the base run's evidence names no branch"
			return e
		}
		found := false
		for _, fk := range forksBy(new, f.Agent) {
			for _, b := range fk.Branches {
				if b.Name != name {
					continue
				}
				found = true
				if b.Status != record.StatusOK {
					set(false, "branch %q of the fork at %s ended %s", name, fk.Node.ID(), b.Status)
					return e
				}
			}
		}
		if !found {
			set(false, "no branch %q from %s in the new run", name, f.Agent)
			return e
		}
		set(true, "branch %q ended ok", name)
	case "fork.uneven":
		checked := 0
		for _, fk := range forksBy(new, f.Agent) {
			if len(fk.Branches) < 2 {
				continue
			}
			checked++
			if slowest, med, uneven := unevenFork(fk, opts); uneven {
				set(false, "the fork at %s: slowest branch %s against a median of %s", fk.Node.ID(), fmtDuration(slowest), fmtDuration(med))
				return e
			}
		}
		if checked == 0 {
			set(false, "no fork from %s with 2 or more branches in the new run", f.Agent)
			return e
		}
		set(true, "branch durations close together in %s from %s", plural(checked, "fork", "forks"), f.Agent)
	case "fork.overlap":
		forks := forksBy(new, f.Agent)
		for _, fk := range forks {
			if key, a, b := overlap(fk); key != "" {
				set(false, "branches %q and %q of the fork at %s both made %s", a, b, fk.Node.ID(), key)
				return e
			}
		}
		set(true, "no call made by two sibling branches (%s from %s examined)", plural(len(forks), "fork", "forks"), f.Agent)
	case "fork.inherit-uncached":
		checked := 0
		for _, fk := range forksBy(new, f.Agent) {
			other := false
			for _, b := range fk.Branches {
				other = other || b.Agent != f.Agent
			}
			if !other {
				continue
			}
			checked++
			if fk.Context != "compact" && fk.Context != "none" {
				set(false, "the fork at %s to another agent still uses context %s", fk.Node.ID(), orDash(fk.Context))
				return e
			}
		}
		if checked == 0 {
			set(false, "no fork from %s to another agent in the new run", f.Agent)
			return e
		}
		set(true, "%s from %s to another agent, all with context compact or none", plural(checked, "fork", "forks"), f.Agent)
	case "handoff.loop":
		a, b := pairOf(ev)
		if a == "" {
			e.Result, e.Detail = NotChecked, "the base run's evidence has no hand-off"
			return e
		}
		most, total := 0, 0
		for _, c := range new.Conversations {
			perTurn := map[int]int{}
			for i, n := range c.Nodes {
				if n.Kind == record.KindHandoff && n.Handoff != nil && between(n.Handoff, a, b) {
					perTurn[turnIndex(c, i)]++
					total++
				}
			}
			for _, k := range perTurn {
				most = max(most, k)
			}
		}
		set(most <= 1, "at most %s between %s and %s in one turn (%d in the run)", plural(most, "hand-off", "hand-offs"), a, b, total)
	case "handoff.early":
		a, b := pairOf(ev)
		if a == "" {
			e.Result, e.Detail = NotChecked, "the base run's evidence has no hand-off"
			return e
		}
		seen := 0
		for _, c := range new.Conversations {
			for i, n := range c.Nodes {
				if n.Kind != record.KindHandoff || n.Handoff == nil || n.Handoff.From != a || n.Handoff.To != b {
					continue
				}
				seen++
				if !ownCallBefore(c, i, a) {
					set(false, "%s handed to %s at %s before a call of its own in that turn", a, b, n.ID())
					return e
				}
			}
		}
		if seen == 0 {
			set(false, "no hand-off from %s to %s in the new run", a, b)
			return e
		}
		set(true, "%s made its own calls before each hand-off to %s (%d)", a, b, seen)
	case "handoff.for-answer":
		a, b := pairOf(ev)
		if a == "" {
			e.Result, e.Detail = NotChecked, "the base run's evidence has no hand-off"
			return e
		}
		for _, h := range new.Handoffs {
			if h.Handoff != nil && h.Handoff.From == a && h.Handoff.To == b {
				set(false, "%s still hands to %s at %s", a, b, h.ID())
				return e
			}
		}
		for _, fk := range forksBy(new, a) {
			if len(fk.Branches) == 1 && fk.Branches[0].Agent == b {
				set(true, "the fork at %s sends one branch from %s to %s, and no hand-off", fk.Node.ID(), a, b)
				return e
			}
		}
		set(false, "no hand-off from %s to %s, but no one-branch fork to %s either", a, b, b)
	case "delegation.missed-specialist":
		s, tools, ok := specialistOf(f)
		if !ok {
			e.Result, e.Detail = NotChecked, "the finding's shape does not name the specialist"
			return e
		}
		if new.FirstOwned(s) == nil {
			set(false, "%s never ran in the new run", s)
			return e
		}
		for _, n := range new.Nodes {
			if n.Kind == record.KindTool && n.Agent == s && n.Tool != nil && contains(tools, n.Tool.Name) {
				set(true, "%s ran and called %s itself (%s)", s, n.Tool.Name, n.ID())
				return e
			}
		}
		set(false, "%s ran but made none of the calls %s (%s)", s, f.Agent, strings.Join(tools, ", "))
	case "fork.sequence":
		e.Result = NotChecked
		e.Detail = "whether a branch waits on a sibling is read from branch instructions and file paths; no separate structural check"
	default:
		e.Result, e.Detail = NotChecked, fmt.Sprintf("no expectation check for rule %s", f.Rule)
	}
	return e
}

// evidence returns the finding's evidence nodes in the base graph.
func evidence(f findings.Finding, g *graph.Run) []*graph.Node {
	var out []*graph.Node
	for _, id := range f.Nodes {
		var seq int64
		if _, err := fmt.Sscanf(id, "n%d", &seq); err != nil {
			continue
		}
		if n := g.Node(seq); n != nil {
			out = append(out, n)
		}
	}
	return out
}

// forksBy returns the forks agent made, in sequence order.
func forksBy(g *graph.Run, agent string) []*graph.Fork {
	var out []*graph.Fork
	for _, f := range g.Forks {
		if f.Node.Agent == agent {
			out = append(out, f)
		}
	}
	return out
}

func callsTool(c *graph.Conversation, tools []string) bool {
	if c == nil {
		return false
	}
	for _, n := range c.Nodes {
		if n.Kind == record.KindTool && n.Tool != nil && contains(tools, n.Tool.Name) {
			return true
		}
	}
	return false
}

// callKey is a call's tool name and canonical JSON arguments, as the audit
// compares calls.
func callKey(n *graph.Node) string {
	args := strings.TrimSpace(n.Tool.Args)
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	return n.Tool.Name + " " + args
}

// repeatAfterJoin returns the first call of the parent after fk's join (in
// the same turn) that a branch already made, or nil.
func repeatAfterJoin(fk *graph.Fork) *graph.Node {
	if fk.Join == nil {
		return nil
	}
	made := map[string]bool{}
	for _, b := range fk.Branches {
		if b.Conv == nil {
			continue
		}
		for _, n := range b.Conv.Nodes {
			if n.Kind == record.KindTool && n.Tool != nil {
				made[callKey(n)] = true
			}
		}
	}
	for _, n := range fk.Parent.Nodes {
		if n.Seq <= fk.Join.Seq {
			continue
		}
		if n.Kind == record.KindUser {
			break
		}
		if n.Kind == record.KindTool && n.Tool != nil && made[callKey(n)] {
			return n
		}
	}
	return nil
}

// overlap returns a call two sibling branches of fk both made, with their names.
func overlap(fk *graph.Fork) (key, a, b string) {
	first := map[string]string{}
	for _, br := range fk.Branches {
		if br.Conv == nil {
			continue
		}
		mine := map[string]bool{}
		for _, n := range br.Conv.Nodes {
			if n.Kind != record.KindTool || n.Tool == nil {
				continue
			}
			k := callKey(n)
			if other, ok := first[k]; ok && other != br.Name {
				return k, other, br.Name
			}
			mine[k] = true
		}
		for k := range mine {
			if _, ok := first[k]; !ok {
				first[k] = br.Name
			}
		}
	}
	return "", "", ""
}

// unevenFork applies fork.uneven's test to fk: the slowest branch at least
// opts.UnevenRatio × the median of its siblings and opts.UnevenMinGap longer.
func unevenFork(fk *graph.Fork, opts *findings.Options) (slowest, median time.Duration, uneven bool) {
	if fk.Slowest == nil {
		return 0, 0, false
	}
	var others []time.Duration
	for _, b := range fk.Branches {
		if b != fk.Slowest {
			others = append(others, b.Duration)
		}
	}
	sort.Slice(others, func(i, j int) bool { return others[i] < others[j] })
	n := len(others)
	if n == 0 {
		return fk.Slowest.Duration, 0, false
	}
	median = others[n/2]
	if n%2 == 0 {
		median = (others[n/2-1] + others[n/2]) / 2
	}
	slowest = fk.Slowest.Duration
	uneven = float64(slowest) >= opts.UnevenRatio*float64(median) && slowest-median >= opts.UnevenMinGap
	return slowest, median, uneven
}

// pairOf returns From and To of the first hand-off among the evidence.
func pairOf(ev []*graph.Node) (a, b string) {
	for _, n := range ev {
		if n.Kind == record.KindHandoff && n.Handoff != nil {
			return n.Handoff.From, n.Handoff.To
		}
	}
	return "", ""
}

func between(h *record.Handoff, a, b string) bool {
	return (h.From == a && h.To == b) || (h.From == b && h.To == a)
}

// turnIndex is the index of the user node that opened node i's turn in c.
func turnIndex(c *graph.Conversation, i int) int {
	for j := i; j >= 0; j-- {
		if c.Nodes[j].Kind == record.KindUser {
			return j
		}
	}
	return 0
}

// ownCallBefore reports whether agent made a tool call in c's turn before node i.
func ownCallBefore(c *graph.Conversation, i int, agent string) bool {
	for j := i - 1; j >= 0; j-- {
		n := c.Nodes[j]
		if n.Kind == record.KindUser {
			return false
		}
		if n.Kind == record.KindTool && n.Agent == agent {
			return true
		}
	}
	return false
}

// specialistOf reads the specialist and its tools from a
// delegation.missed-specialist shape: "<agent> did <S>'s <tool,tool>".
func specialistOf(f findings.Finding) (string, []string, bool) {
	rest, ok := strings.CutPrefix(f.Shape, f.Agent+" did ")
	if !ok {
		return "", nil, false
	}
	s, tools, ok := strings.Cut(rest, "'s ")
	if !ok || s == "" || tools == "" {
		return "", nil, false
	}
	return s, strings.Split(tools, ","), true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// uniq sorts and deduplicates.
func uniq(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
