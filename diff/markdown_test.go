package diff

import (
	"bytes"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/internal/mdcheck"
)

// agentDiff is a comparison whose findings (new, fixed, unchanged), fix
// places and per-agent table all name agent.
func agentDiff(agent string) *Report {
	finding := func(status, path string) FindingChange {
		loc := findings.Location{Path: path, Line: 2}
		if path == "" {
			loc = findings.Location{Label: "the instructions of agent " + agent}
		}
		return FindingChange{Status: status, Finding: findings.Finding{
			Rule: "fanout.missed", Name: "missed fan-out", Area: findings.Forking, Severity: findings.Warning, Agent: agent,
			Message: "agent " + agent + " read 3 files one after another", Nodes: []string{"n2", "n3", "n4"},
			Fix:  findings.Fix{Location: loc, Text: "tell " + agent + " to fork"},
			Next: agent + " forks", Price: findings.Price{ElapsedMS: 2400},
		}}
	}
	fixed := finding(StatusFixed, "")
	fixed.Expectation = &Expectation{Next: agent + " forks", Result: Shown, Detail: agent + " forked at n5"}
	totals := func(v int64) []Delta {
		var ds []Delta
		for _, m := range Metrics() {
			ds = append(ds, Delta{Metric: m, Base: v, New: v + 1, Change: 1, Reported: true})
		}
		return ds
	}
	return &Report{
		Base:    RunInfo{Ref: "base.db:latest", Run: "run-a", Project: "p", Status: "ok"},
		New:     RunInfo{Ref: "run-b", Run: "run-b", Project: "p", Status: "ok"},
		Summary: "1 new finding, 1 fixed",
		Totals:  totals(10),
		Agents:  []AgentDelta{{Agent: agent, InBase: true, InNew: true, Totals: totals(5)}, {Agent: "other", InNew: true, Totals: totals(0)}},
		Findings: Findings{
			New:       []FindingChange{finding(StatusNew, "agents/"+agent+".md")},
			Fixed:     []FindingChange{fixed},
			Unchanged: []FindingChange{finding(StatusUnchanged, "agents.yaml")},
		},
		Failed: true, Reasons: []string{"agent " + agent + " spent more"},
	}
}

// TestWriteMarkdown_HostileAgent checks an agent name made of Markdown
// (emphasis, code, HTML, table pipes, a link, a line break…) reads as
// itself everywhere the comparison names it — findings, fix places, the
// per-agent table, the reasons — and adds no structure.
func TestWriteMarkdown_HostileAgent(t *testing.T) {
	var benign, hostile bytes.Buffer
	if err := WriteMarkdown(&benign, agentDiff(mdcheck.Benign)); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&hostile, agentDiff(mdcheck.Hostile)); err != nil {
		t.Fatal(err)
	}
	mdcheck.Same(t, benign.String(), hostile.String())
}
