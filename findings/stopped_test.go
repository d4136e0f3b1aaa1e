package findings_test

import (
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// stoppedRun builds, in memory, a run of status st whose trunk forks
// quick, slow and slower: quick answers; the other two are cut off. With
// joined, the runtime joined them as cancelled (Ctrl-C); without, the
// process died and no join was written (kill -9). A second, earlier fork
// that closed has a branch that failed with an error.
func stoppedRun(t *testing.T, st record.Status, joined bool) *graph.Run {
	t.Helper()
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var nodes []*record.Node
	add := func(n *record.Node) *record.Node {
		n.Seq = int64(len(nodes) + 1)
		if n.Status == "" {
			n.Status = record.StatusOK
		}
		if n.Agent == "" {
			n.Agent = "analyst"
		}
		nodes = append(nodes, n)
		return n
	}
	branches := func(names ...string) *record.Fork {
		f := &record.Fork{Context: "none"}
		for _, n := range names {
			f.Branches = append(f.Branches, record.ForkBranch{Name: n, Agent: "analyst", Instructions: "Total region " + n + "."})
		}
		return f
	}
	add(&record.Node{Kind: record.KindUser, Text: "Compare the regions", Started: at(0), Ended: at(0)})
	// A closed fork: eu ends in an error, a prompt mistake even in a stopped run.
	f1 := add(&record.Node{Kind: record.KindFork, Started: at(0), Ended: at(0), Fork: branches("eu", "us")})
	add(&record.Node{Kind: record.KindFinal, Branch: "eu", ForkSeq: f1.Seq, Depth: 1, Started: at(100), Ended: at(100), Status: record.StatusError, Error: "no such file regions/eu.md"})
	add(&record.Node{Kind: record.KindFinal, Branch: "us", ForkSeq: f1.Seq, Depth: 1, Started: at(100), Ended: at(100), Text: "6.1M"})
	add(&record.Node{Kind: record.KindJoin, Started: at(100), Ended: at(100), Join: &record.Join{ForkSeq: f1.Seq, Branches: []record.JoinBranch{
		{Name: "eu", Agent: "analyst", Status: record.StatusError, Duration: 100 * time.Millisecond, Answer: "no such file regions/eu.md"},
		{Name: "us", Agent: "analyst", Status: record.StatusOK, Duration: 100 * time.Millisecond, Answer: "6.1M"}}}})
	// The fork the run was stopped in.
	f2 := add(&record.Node{Kind: record.KindFork, Started: at(100), Ended: at(100), Fork: branches("quick", "slow", "slower")})
	add(&record.Node{Kind: record.KindLLM, Branch: "quick", ForkSeq: f2.Seq, Depth: 1, Started: at(100), Ended: at(200), LLM: &record.LLM{Usage: record.Usage{In: 300, Out: 10}}})
	add(&record.Node{Kind: record.KindFinal, Branch: "quick", ForkSeq: f2.Seq, Depth: 1, Started: at(200), Ended: at(200), Text: "4.2M"})
	cut := record.StatusInterrupted
	if joined {
		cut = record.StatusCancelled
	}
	for _, b := range []string{"slow", "slower"} {
		n := add(&record.Node{Kind: record.KindLLM, Branch: b, ForkSeq: f2.Seq, Depth: 1, Started: at(100), Status: cut, LLM: &record.LLM{}})
		if joined {
			n.Ended, n.Error = at(900), "cancelled while waiting for the model"
			add(&record.Node{Kind: record.KindFinal, Branch: b, ForkSeq: f2.Seq, Depth: 1, Started: at(900), Ended: at(900), Status: cut, Error: n.Error})
		}
	}
	if joined {
		add(&record.Node{Kind: record.KindJoin, Started: at(900), Ended: at(900), Join: &record.Join{ForkSeq: f2.Seq, Branches: []record.JoinBranch{
			{Name: "quick", Agent: "analyst", Status: record.StatusOK, Duration: 100 * time.Millisecond, Answer: "4.2M"},
			{Name: "slow", Agent: "analyst", Status: cut, Duration: 800 * time.Millisecond, Answer: "cancelled while waiting for the model"},
			{Name: "slower", Agent: "analyst", Status: cut, Duration: 800 * time.Millisecond, Answer: "cancelled while waiting for the model"}}}})
	}
	r := &record.Run{ID: "stopped", Status: st, Started: t0,
		Project: record.Project{Name: "p", Files: []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    tools: [read_file]\n    fork: {agents: [analyst]}\n"}}}}
	if joined {
		r.Ended = at(900)
	}
	g, err := graph.Build(r, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestAudit_StoppedRun: a run stopped by Ctrl-C or kill -9 mid-fork is
// audited with a notice first; its open fork is not applicable, so the
// branches it cut off are no failed branches and no rule prices them; the
// closed fork's real error is still reported (issue 12, item 5).
func TestAudit_StoppedRun(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status record.Status
		joined bool
		notice string
		reason string
	}{
		{"interrupted", record.StatusInterrupted, false, "this run was interrupted", "run interrupted"},
		{"cancelled", record.StatusCancelled, true, "this run was cancelled (Ctrl-C)", "run cancelled"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := (&findings.Config{Rules: rules.All}).Audit(stoppedRun(t, tt.status, tt.joined))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(rep.Notice, tt.notice) || !strings.Contains(rep.Notice, "its 1 open fork is not audited") {
				t.Errorf("Notice = %q", rep.Notice)
			}
			if len(rep.Findings) != 1 || rep.Findings[0].Rule != "branch.failed" || !strings.Contains(rep.Findings[0].Message, `branch "eu"`) {
				t.Fatalf("findings, want only eu's error:\n%s", dump(rep))
			}
			if got, want := check(t, rep, "branch.failed").Detail, "1 finding; 2 branches examined; 1 open fork not applicable ("+tt.reason+")"; got != want {
				t.Errorf("branch.failed detail = %q, want %q", got, want)
			}
			if got, want := check(t, rep, "fork.uneven").Detail, "1 fork with 2 or more branches examined; 1 open fork not applicable ("+tt.reason+")"; got != want {
				t.Errorf("fork.uneven detail = %q, want %q", got, want)
			}
			var text strings.Builder
			if err := report.WriteText(&text, rep); err != nil {
				t.Fatal(err)
			}
			if lines := strings.SplitN(text.String(), "\n", 3); !strings.HasPrefix(lines[1], "notice: "+tt.notice) {
				t.Errorf("the text report does not open with the notice:\n%s", text.String())
			}
		})
	}
}

// TestAudit_StoppedRunOnlyOpenForks: when the only fork is open, every fork
// rule is "not applicable (run interrupted…)", and --fail-on error has
// nothing to trip on.
func TestAudit_StoppedRunOnlyOpenForks(t *testing.T) {
	g := stoppedRun(t, record.StatusInterrupted, false)
	g.Forks = g.Forks[1:] // keep the open fork only
	rep, err := (&findings.Config{Rules: rules.All}).Audit(g)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Count(findings.Warning) != 0 {
		t.Errorf("findings in a run whose only fork was cut off:\n%s", dump(rep))
	}
	for _, id := range []string{"fork.sequence", "fork.one-branch", "join.repeat", "branch.failed", "fork.uneven", "fork.overlap", "fork.inherit-uncached"} {
		if c := check(t, rep, id); c.Status != findings.StatusNotApplicable || c.Detail != "run interrupted: 1 open fork" {
			t.Errorf("%s", c)
		}
	}
}

// TestAudit_FinishedRunNoNotice: a run that finished has no notice.
func TestAudit_FinishedRunNoNotice(t *testing.T) {
	if rep := recordFixture(t, "audit-branch-failed").audit(t); rep.Notice != "" {
		t.Errorf("Notice = %q for a finished run", rep.Notice)
	}
}
