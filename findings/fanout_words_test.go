package findings_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
)

// TestFanout_SameCall: 200 reads of one file are "the same call 200
// times", reported once with a short message, not 200 items or 200
// branches against maxBranches 6, and the text lists the nodes as a range
// (issue 12, item 6).
func TestFanout_SameCall(t *testing.T) {
	rep := recordFixture(t, "audit-fanout-missed-same-call").audit(t)
	if len(rep.Findings) != 1 {
		t.Fatalf("%d findings, want 1", len(rep.Findings))
	}
	f := rep.Findings[0]
	if !strings.Contains(f.Message, "the same call 200 times") || strings.Count(f.Message+f.Fix.Text+f.Next, "regions/eu.md") > 2 {
		t.Errorf("message %q, fix %q, next %q", f.Message, f.Fix.Text, f.Next)
	}
	if strings.Contains(f.Next, "200 branches") || strings.Contains(f.Fix.Text, "branch") {
		t.Errorf("the fix forks identical calls: %q / %q", f.Fix.Text, f.Next)
	}
	var text bytes.Buffer
	if err := report.WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "   nodes: n2–n401\n") {
		t.Errorf("nodes are not written as a range:\n%s", text.String())
	}
	if n := strings.Count(text.String(), "regions/eu.md"); n > 3 {
		t.Errorf("the text names regions/eu.md %d times", n)
	}
}

// TestFanout_ManyItems: 20 different reads with maxBranches 6 name six
// items and count the rest, and the fix asks for 6 branches, not 20.
func TestFanout_ManyItems(t *testing.T) {
	rep := recordFixture(t, "audit-fanout-missed-many").audit(t)
	f := rep.Findings[0]
	if !strings.Contains(f.Message, "regions/area06.md, …and 14 more)") || strings.Contains(f.Message, "area07") {
		t.Errorf("message = %q", f.Message)
	}
	if !strings.Contains(f.Next, "with 6 branches (its maxBranches), each taking a share of the 20 files") || strings.Contains(f.Fix.Text, "20 branches") {
		t.Errorf("next = %q, fix = %q", f.Next, f.Fix.Text)
	}
}

// TestFanout_NamesWhatDiffers: three search_fares calls on one date to
// three destinations name the destinations, and the fix forks one branch
// per destination, not per date (issue 12, item 10).
func TestFanout_NamesWhatDiffers(t *testing.T) {
	rep := recordFixture(t, "audit-fanout-missed-differing-args").audit(t)
	f := rep.Findings[0]
	if !strings.Contains(f.Message, "(LIS, OPO, FAO)") || strings.Contains(f.Message, "2025-03-14") {
		t.Errorf("message = %q", f.Message)
	}
	if !strings.Contains(f.Fix.Text, "fork one branch per destination") || !strings.Contains(f.Next, "a branch per destination (3 branches)") {
		t.Errorf("fix = %q, next = %q", f.Fix.Text, f.Next)
	}
}

// serialReads builds, in memory, a trunk of n reads, each in its own
// response, of n different files when distinct is set, else of one.
func serialReads(n int, distinct bool) *graph.Run {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	nodes := []*record.Node{{Seq: 1, Kind: record.KindUser, Agent: "analyst", Text: "Total every area", Started: t0, Ended: t0, Status: record.StatusOK}}
	at := t0
	for i := 0; i < n; i++ {
		path := "regions/area.md"
		if distinct {
			path = fmt.Sprintf("regions/area%05d.md", i)
		}
		nodes = append(nodes,
			&record.Node{Seq: int64(len(nodes) + 1), Kind: record.KindLLM, Agent: "analyst", Started: at, Ended: at.Add(time.Second), Status: record.StatusOK, LLM: &record.LLM{Calls: []string{"read_file"}}},
			&record.Node{Seq: int64(len(nodes) + 2), Kind: record.KindTool, Agent: "analyst", Started: at.Add(time.Second), Ended: at.Add(time.Second), Status: record.StatusOK,
				Tool: &record.Tool{Name: "read_file", Args: `{"path":"` + path + `"}`, Result: "1M", Research: true}})
		at = at.Add(time.Second)
	}
	g, err := graph.Build(&record.Run{ID: "serial", Status: record.StatusOK, Started: t0, Ended: at,
		Project: record.Project{Files: []record.File{{Path: "agents.yaml", Content: "agents:\n  - name: analyst\n    tools: [read_file]\n    fork: {agents: [analyst], maxBranches: 6}\n"}}}}, nodes)
	if err != nil {
		panic(err)
	}
	return g
}

// TestFanout_OutputLinear: the text of a missed fan-out stays the same
// size whatever the number of items (the lists are cut, the nodes a
// range), and the JSON grows with the evidence list, linearly.
func TestFanout_OutputLinear(t *testing.T) {
	size := func(n int, distinct bool) (text, js int) {
		rep, err := (&findings.Config{Rules: []*findings.Rule{rules.FanoutMissed}}).Audit(serialReads(n, distinct))
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Findings) != 1 {
			t.Fatalf("%d reads: %d findings, want 1", n, len(rep.Findings))
		}
		var a, b bytes.Buffer
		if err := report.WriteText(&a, rep); err != nil {
			t.Fatal(err)
		}
		if err := report.WriteJSON(&b, rep); err != nil {
			t.Fatal(err)
		}
		return a.Len(), b.Len()
	}
	for _, distinct := range []bool{true, false} {
		t1, j1 := size(1000, distinct)
		t2, j2 := size(10000, distinct)
		if t2 > t1+64 { // a few more digits in the counts and times
			t.Errorf("distinct=%v: text grows from %d to %d bytes for 10× the items", distinct, t1, t2)
		}
		if r := float64(j2) / float64(j1); r > 12 {
			t.Errorf("distinct=%v: JSON grows %.1f× for 10× the items", distinct, r)
		}
	}
}

func TestNodeRanges(t *testing.T) {
	for _, tt := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"n4"}, "n4"},
		{[]string{"n4", "n5"}, "n4 n5"},
		{[]string{"n4", "n5", "n6"}, "n4–n6"},
		{[]string{"n2", "n3", "n4", "n9", "n11", "n12", "n13", "n14"}, "n2–n4 n9 n11–n14"},
		{[]string{"n3", "x", "n4", "n5"}, "n3 x n4 n5"},
	} {
		if got := report.NodeRanges(tt.in, " "); got != tt.want {
			t.Errorf("NodeRanges(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
