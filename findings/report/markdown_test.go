package report_test

import (
	"bytes"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/internal/mdcheck"
	"github.com/inspect-dev/inspect/money"
)

// agentReport is an audit whose findings, fix places, checks, warnings
// and cost table all name agent: every place the Markdown writes a name.
func agentReport(agent string) *findings.Report {
	f := findings.Finding{
		Rule: "fanout.missed", Name: "missed fan-out", Area: findings.Forking, Severity: findings.Warning, Agent: agent,
		Message: "agent " + agent + " read 3 files one after another", Nodes: []string{"n2", "n3", "n4"},
		Fix: findings.Fix{
			Location: findings.Location{Label: "the instructions of agent " + agent, Source: "/tmp/session.jsonl"},
			Also:     []findings.Location{{Path: "agents/" + agent + ".md", Line: 3}},
			Text:     "tell " + agent + " to fork independent reads",
		},
		Next:   agent + " forks the reads",
		Price:  findings.Price{ElapsedMS: 2400, TokensIn: 30, Basis: "saved by " + agent},
		Causes: []findings.Cause{{Check: "fork in tools", Result: "yes", Detail: agent + " was offered fork"}},
		Shape:  "x", Fingerprint: "0123456789abcdef",
	}
	ignored := f
	ignored.Suppressed = &findings.Suppression{Kind: findings.SuppressedIgnore, Reason: "accepted for " + agent, Source: ".inspect.yaml:3"}
	r := &findings.Report{
		Run: "run-1", Project: "p", Status: "ok", ElapsedMS: 10000, TokensIn: 100, TokensOut: 10, LLMCalls: 3,
		Findings: []findings.Finding{f, ignored},
		Checks:   []findings.Check{{Rule: "fanout.missed", Status: findings.StatusFound, Detail: "2 findings; longest run by " + agent, Findings: 2}},
		Warnings: []string{"ignore entry .inspect.yaml:3 (fanout.missed, agent " + agent + ") expired"},
		Money: &money.RunCost{Currency: "USD", Total: money.Amount{Amount: 0.01},
			Agents: []money.AgentCost{{Agent: agent, Amount: money.Amount{Amount: 0.01}}, {Agent: "other", Amount: money.Amount{Amount: 0.002}}}},
	}
	r.Grades, r.Scores = findings.Grade(r)
	return r
}

// TestWriteMarkdown_HostileAgent checks an agent name made of Markdown
// (emphasis, code, HTML, table pipes, a link, a line break…) reads as
// itself everywhere the report names it and adds no structure, in the
// findings, the fix places (code spans and labels), the checks table and
// the cost table.
func TestWriteMarkdown_HostileAgent(t *testing.T) {
	var benign, hostile bytes.Buffer
	if err := report.WriteMarkdown(&benign, agentReport(mdcheck.Benign)); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&hostile, agentReport(mdcheck.Hostile)); err != nil {
		t.Fatal(err)
	}
	mdcheck.Same(t, benign.String(), hostile.String())
}
