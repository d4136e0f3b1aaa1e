package findings_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// check returns the check of rule id in rep.
func check(t testing.TB, rep *findings.Report, id string) findings.Check {
	t.Helper()
	for _, c := range rep.Checks {
		if c.Rule == id {
			return c
		}
	}
	t.Fatalf("no check of %s", id)
	return findings.Check{}
}

// TestForkSequence_PairsUnordered: a fork of 3 branches has 3 sibling
// pairs, not 6 (issue 12, item 16).
func TestForkSequence_PairsUnordered(t *testing.T) {
	rep := recordFixture(t, "nearmiss-even-fanout").audit(t)
	if got := check(t, rep, "fork.sequence").Detail; got != "3 sibling pairs in 1 fork checked" {
		t.Errorf("fork.sequence detail = %q, want 3 sibling pairs for 3 branches", got)
	}
}

// TestForkSequence_Deterministic: when a listing holds several paths a
// sibling wrote, the finding names the first in sorted order every time,
// never the one a map happened to give first (issue 12, item 9).
func TestForkSequence_Deterministic(t *testing.T) {
	r := recordFixture(t, "audit-fork-sequence-lists-folder")
	for i := 0; i < 20; i++ {
		rep := r.audit(t)
		if len(rep.Findings) != 1 {
			t.Fatalf("%d findings, want 1:\n%s", len(rep.Findings), dump(rep))
		}
		if msg := rep.Findings[0].Message; !strings.Contains(msg, "it listed out, which holds out/eu.md, which sibling \"sums\" writes") {
			t.Fatalf("audit %d: message = %q, want out/eu.md (sorted first of out/eu.md, out/us.md)", i, msg)
		}
	}
}

// wideFork builds, in memory, a run whose trunk forks n branches; branch i
// writes out/i.md and reads out/<i+1>.md (its neighbour's file) when chain
// is set, else its own.
func wideFork(n int, chain bool) *graph.Run {
	t := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var nodes []*record.Node
	seq := int64(0)
	add := func(node *record.Node) {
		seq++
		node.Seq, node.Started, node.Ended, node.Status = seq, t, t.Add(time.Second), record.StatusOK
		nodes = append(nodes, node)
	}
	add(&record.Node{Kind: record.KindUser, Agent: "analyst", Text: "go"})
	add(&record.Node{Kind: record.KindLLM, Agent: "analyst", LLM: &record.LLM{Calls: []string{"fork"}}})
	fork := &record.Node{Kind: record.KindFork, Agent: "analyst", Fork: &record.Fork{Context: "none"}}
	for i := 0; i < n; i++ {
		fork.Fork.Branches = append(fork.Fork.Branches, record.ForkBranch{Name: fmt.Sprintf("b%d", i), Agent: "analyst", Instructions: fmt.Sprintf("Total part %d.", i)})
	}
	add(fork)
	join := &record.Node{Kind: record.KindJoin, Agent: "analyst", Join: &record.Join{ForkSeq: fork.Seq}}
	for i, br := range fork.Fork.Branches {
		c := func(k record.Kind) *record.Node {
			return &record.Node{Kind: k, Branch: br.Name, ForkSeq: fork.Seq, Agent: "analyst", Depth: 1}
		}
		read := i
		if chain {
			read = (i + 1) % n
		}
		l := c(record.KindLLM)
		l.LLM = &record.LLM{Calls: []string{"write_file"}}
		add(l)
		w := c(record.KindTool)
		w.Tool = &record.Tool{Name: "write_file", Args: fmt.Sprintf(`{"path":"out/%d.md","content":"x"}`, i)}
		add(w)
		l = c(record.KindLLM)
		l.LLM = &record.LLM{Calls: []string{"read_file"}}
		add(l)
		rd := c(record.KindTool)
		rd.Tool = &record.Tool{Name: "read_file", Args: fmt.Sprintf(`{"path":"./out/%d.md"}`, read), Research: true}
		add(rd)
		l = c(record.KindLLM)
		l.LLM = &record.LLM{}
		add(l)
		join.Join.Branches = append(join.Join.Branches, record.JoinBranch{Name: br.Name, Agent: br.Agent, Status: record.StatusOK, Duration: 3 * time.Second})
	}
	add(join)
	g, err := graph.Build(&record.Run{ID: "wide", Status: record.StatusOK, Started: t, Ended: t.Add(time.Hour)}, nodes)
	if err != nil {
		panic(err)
	}
	return g
}

// TestForkSequence_WideFork: in a fork of 500 branches each reading its
// neighbour's file, every branch depends on exactly its neighbour; reading
// its own file, none does.
func TestForkSequence_WideFork(t *testing.T) {
	cfg := &findings.Config{Rules: []*findings.Rule{rules.ForkSequence}}
	rep, err := cfg.Audit(wideFork(500, true))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 500 {
		t.Fatalf("%d findings, want one per branch (500)", len(rep.Findings))
	}
	if msg := rep.Findings[499].Message; !strings.Contains(msg, `branch "b499" `) || !strings.Contains(msg, `sibling "b0": it read out/0.md`) {
		t.Errorf("last finding = %q", msg)
	}
	if got := rep.Checks[0].Detail; got != "500 findings; 124750 sibling pairs in 1 fork checked" {
		t.Errorf("detail = %q", got)
	}
	rep, err = cfg.Audit(wideFork(500, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 {
		t.Errorf("%d findings for branches reading their own files:\n%s", len(rep.Findings), dump(rep))
	}
}

// BenchmarkForkSequence measures fork.sequence on forks of 1,000 and
// 10,000 branches: the time per branch stays flat (the rule indexes names
// and paths once instead of comparing every pair).
func BenchmarkForkSequence(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			g := wideFork(n, true)
			cfg := &findings.Config{Rules: []*findings.Rule{rules.ForkSequence}}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := cfg.Audit(g); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/branch")
		})
	}
}
