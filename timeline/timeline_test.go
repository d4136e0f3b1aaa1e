package timeline_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mattn/go-runewidth"

	"github.com/inspect-dev/inspect/chart"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/internal/golden"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/examples"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/timeline"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var demo struct {
	once sync.Once
	g    *graph.Run
	err  error
}

// demoRun records the built-in demo project (what `inspect demo` runs) in
// virtual time, once per test binary.
func demoRun(t *testing.T) *graph.Run {
	t.Helper()
	demo.once.Do(func() {
		tmp, err := makeTemp()
		if err != nil {
			demo.err = err
			return
		}
		ctx := context.Background()
		src := filepath.Join(tmp, "demo")
		if _, err := examples.Write(examples.Demo(), src); err != nil {
			demo.err = err
			return
		}
		db, err := store.Open(ctx, filepath.Join(tmp, "runs.db"))
		if err != nil {
			demo.err = err
			return
		}
		defer db.Close()
		demo.g, demo.err = runtimetest.RecordFixture(ctx, db, src, filepath.Join(tmp, "run"), "demo00000001", graphtest.Start)
	})
	if demo.err != nil {
		t.Fatal(demo.err)
	}
	return demo.g
}

// TestBuild_Demo: the demo's trunk forks growth and risks (risks the slow
// one), joins, and hands off to the writer; the run waited on trunk and
// risks.
func TestBuild_Demo(t *testing.T) {
	tl := timeline.Build((&mermaid.Config{}).Chart(demoRun(t)))
	var titles []string
	for _, l := range tl.Lanes {
		titles = append(titles, l.Title)
	}
	if got := strings.Join(titles, " "); got != "trunk growth risks" {
		t.Fatalf("lanes %q, want trunk growth risks", got)
	}
	trunk, growth, risks := tl.Lanes[0], tl.Lanes[1], tl.Lanes[2]
	if !trunk.Critical || growth.Critical || !risks.Critical || growth.Slowest || !risks.Slowest {
		t.Errorf("critical trunk/growth/risks = %v/%v/%v, slowest growth/risks = %v/%v; want true/false/true, false/true",
			trunk.Critical, growth.Critical, risks.Critical, growth.Slowest, risks.Slowest)
	}
	if got := strings.Join(tl.Critical, " → "); got != "trunk → risks" {
		t.Errorf("Critical = %q, want trunk → risks", got)
	}
	var marks []string
	for _, m := range trunk.Marks {
		marks = append(marks, m.Kind.String()+" "+m.Box)
	}
	if got := strings.Join(marks, ", "); got != "fork n9, join n20, handoff n22" {
		t.Errorf("trunk marks %q, want fork n9, join n20, handoff n22", got)
	}
	var waits []timeline.Bar
	models := 0
	for _, b := range trunk.Bars {
		switch b.Kind {
		case timeline.BarWait:
			waits = append(waits, b)
		case timeline.BarModel:
			models++
		}
	}
	if len(waits) != 1 || waits[0].End.Sub(waits[0].Start) != 15*time.Second {
		t.Errorf("trunk waits %+v, want one of 15s (the risks branch)", waits)
	}
	if models != 7 {
		t.Errorf("trunk has %d model bars, want 7 (n2 n4 n6 n8 n21 n23 n25)", models)
	}
	if d := risks.Duration(); d != 15*time.Second {
		t.Errorf("risks lasts %v, want 15s", d)
	}
	if !growth.Start.Equal(risks.Start) || !growth.Start.Equal(waits[0].Start) {
		t.Errorf("the branches start at %v and %v, the wait at %v; want the fork's end for all", growth.Start, risks.Start, waits[0].Start)
	}
	if tl.End.Sub(tl.Start) != demoRun(t).Elapsed() {
		t.Errorf("span %v, want the run's elapsed %v", tl.End.Sub(tl.Start), demoRun(t).Elapsed())
	}
}

// TestFprint_Demo: the text timeline at three widths (goldens reviewed by
// eye), every line within the width, no escape sequence when plain.
func TestFprint_Demo(t *testing.T) {
	tl := timeline.Build((&mermaid.Config{}).Chart(demoRun(t)))
	for _, w := range []int{60, 80, 120} {
		var out bytes.Buffer
		if err := timeline.Fprint(&out, tl, timeline.Options{Width: w}); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out.String(), "\n") {
			if n := runewidth.StringWidth(line); n > w {
				t.Errorf("width %d: a line of %d columns: %q", w, n, line)
			}
		}
		if bytes.ContainsRune(out.Bytes(), 0x1b) {
			t.Errorf("width %d: plain output holds an escape", w)
		}
		s := out.String()
		wants := []string{"* trunk @analyst→", "15.0s slowest", "┬", "┴", "»", "critical path (*): trunk → risks"}
		if w >= 80 {
			wants = append(wants, "* trunk @analyst→writer", "growth @researcher")
		}
		for _, want := range wants {
			if !strings.Contains(s, want) {
				t.Errorf("width %d: no %q in\n%s", w, want, s)
			}
		}
		golden.Check(t, "demo-"+itoa(w)+".txt", out.Bytes(), *update)
	}
	var col bytes.Buffer
	if err := timeline.Fprint(&col, tl, timeline.Options{Width: 80, Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(col.String(), "\x1b[1;33m") {
		t.Error("coloured output does not colour the critical path")
	}
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(col.String(), "")
	var want bytes.Buffer
	timeline.Fprint(&want, tl, timeline.Options{Width: 80})
	if plain != want.String() {
		t.Errorf("coloured output without its colours differs from the plain one:\n%s\nwant\n%s", plain, want.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestFprint_Hostile: escape sequences in branch and agent names are shown,
// never written, in plain and coloured output.
func TestFprint_Hostile(t *testing.T) {
	at := func(s int) time.Time { return graphtest.Start.Add(time.Duration(s) * time.Second) }
	evil := "b\x1b]0;pwned\x07ad\x1b[2J\u009b2J"
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "a\x1b[31m", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "go"},
		{Seq: 2, Kind: record.KindFork, Agent: "a\x1b[31m", Started: at(0), Ended: at(0), Status: record.StatusOK,
			Fork: &record.Fork{Context: "none", Branches: []record.ForkBranch{{Name: evil, Agent: "w\x1b]52;c;eA==\x07"}}}},
		{Seq: 3, Kind: record.KindLLM, Branch: evil, ForkSeq: 2, Depth: 1, Agent: "w\x1b]52;c;eA==\x07", Started: at(0), Ended: at(3), Status: record.StatusOK, LLM: &record.LLM{}},
		{Seq: 4, Kind: record.KindJoin, Agent: "a\x1b[31m", Started: at(3), Ended: at(3), Status: record.StatusOK,
			Join: &record.Join{ForkSeq: 2, Branches: []record.JoinBranch{{Name: evil, Status: record.StatusOK, Duration: 3 * time.Second}}}},
	}
	g, err := graph.Build(&record.Run{ID: "x\x1b[2J", Started: at(0), Ended: at(3), Status: record.StatusOK}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	tl := timeline.Build((&mermaid.Config{}).Chart(g))
	for _, color := range []bool{false, true} {
		var out bytes.Buffer
		if err := timeline.Fprint(&out, tl, timeline.Options{Width: 100, Color: color}); err != nil {
			t.Fatal(err)
		}
		s := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out.String(), "")
		if strings.ContainsAny(s, "\x1b\x07\u009b") {
			t.Errorf("color %v: a raw control character in\n%q", color, s)
		}
		if !strings.Contains(s, `b\x1b]0;pwned\x07ad`) {
			t.Errorf("color %v: the branch name is not shown visibly:\n%s", color, s)
		}
	}
}

// TestBuild_Large: a 20,000-node realistic run collapses as its chart
// does: a bounded number of lanes and bars, every bar inside the span.
func TestBuild_Large(t *testing.T) {
	var nodes []*record.Node
	if err := graphtest.Realistic(20_000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		t.Fatal(err)
	}
	run := graphtest.RealisticRun()
	run.Status = record.StatusOK
	run.Ended = nodes[len(nodes)-1].Ended
	g, err := graph.Build(run, nodes)
	if err != nil {
		t.Fatal(err)
	}
	ch := (&mermaid.Config{}).Chart(g)
	tl := timeline.Build(ch)
	bars := 0
	for _, l := range tl.Lanes {
		bars += len(l.Bars) + len(l.Marks)
		for _, b := range l.Bars {
			if b.Start.Before(tl.Start) || b.End.After(tl.End) || b.End.Before(b.Start) {
				t.Fatalf("lane %s: bar %s %v..%v outside the span %v..%v", l.Title, b.Box, b.Start, b.End, tl.Start, tl.End)
			}
		}
	}
	boxes := 0
	ch.Walk(func(*chart.Box, *chart.Branch) { boxes++ })
	if bars > boxes+len(g.Forks) || len(tl.Lanes) > boxes {
		t.Errorf("%d lanes and %d bars and marks for %d boxes: not collapsed like the chart", len(tl.Lanes), bars, boxes)
	}
	if tl.Collapsed == "" {
		t.Error("a 20,000-node timeline does not say it was collapsed")
	}
}

var tempDirs []string

func makeTemp() (string, error) {
	d, err := os.MkdirTemp("", "timeline-test-")
	tempDirs = append(tempDirs, d)
	return d, err
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// TestAxis_Gaps: a collapsed run's long elided middle is drawn narrow (a
// broken axis), the rest keeps its time to scale, and positions keep the
// order of times.
func TestAxis_Gaps(t *testing.T) {
	var nodes []*record.Node
	if err := graphtest.Realistic(20_000, func(n *record.Node) error { nodes = append(nodes, n); return nil }); err != nil {
		t.Fatal(err)
	}
	run := graphtest.RealisticRun()
	run.Status, run.Ended = record.StatusOK, nodes[len(nodes)-1].Ended
	g, err := graph.Build(run, nodes)
	if err != nil {
		t.Fatal(err)
	}
	tl := timeline.Build((&mermaid.Config{}).Chart(g))
	ax := tl.Axis(1000)
	gaps := ax.Gaps()
	if len(gaps) == 0 {
		t.Fatal("no stretch drawn narrow in a run whose trunk's middle is elided")
	}
	for _, gp := range gaps {
		if w := gp.X1 - gp.X0; w < 39.9 || w > 40.1 {
			t.Errorf("a gap is %.1f wide, want 4%% of 1000", w)
		}
	}
	if x := ax.X(tl.Start); x != 0 {
		t.Errorf("X(start) = %v, want 0", x)
	}
	if x := ax.X(tl.End); x < 999.9 {
		t.Errorf("X(end) = %v, want 1000", x)
	}
	var times []time.Time
	for _, n := range g.Nodes {
		times = append(times, n.Started)
	}
	sortTimes(times)
	prev := -1.0
	for _, at := range times {
		x := ax.X(at)
		if x < prev-1e-9 {
			t.Fatalf("X(%v) = %v is left of an earlier time's %v", at, x, prev)
		}
		prev = x
	}
	// The first lanes (the trunk's head) now span columns, not one.
	head := tl.Lanes[1]
	if w := ax.X(head.End) - ax.X(head.Start); w < 0.5 {
		t.Errorf("the first branch spans %.2f of 1000: the axis is not broken", w)
	}
	var out bytes.Buffer
	if err := timeline.Fprint(&out, tl, timeline.Options{Width: 100}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "≈ time elided") || !strings.Contains(out.String(), "≈≈") {
		t.Errorf("the text timeline does not show the elided time:\n%.1500s", out.String())
	}
}

func sortTimes(ts []time.Time) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].Before(ts[j-1]); j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// TestParallelGroup: the calls of a parallel call group are bars of the
// conversation's lane, each at its own time, carrying the group's id and
// a slot of their own among the calls drawn (the chart's first four and
// the box of the rest, past mermaid.MaxCalls).
func TestParallelGroup(t *testing.T) {
	t0 := graphtest.Start
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	nodes := []*record.Node{
		{Seq: 1, Kind: record.KindUser, Agent: "main", Started: at(0), Ended: at(0), Status: record.StatusOK, Text: "go"},
		{Seq: 2, Kind: record.KindLLM, Agent: "main", Started: at(0), Ended: at(1000), Status: record.StatusOK, LLM: &record.LLM{Calls: []string{"Read", "Read", "Read", "Read", "Read", "Read"}}},
	}
	for i := 0; i < 6; i++ {
		nodes = append(nodes, &record.Node{Seq: int64(3 + i), Kind: record.KindTool, Agent: "main", CalledBy: 2,
			Started: at(1000 + 100*i), Ended: at(2000 + 500*i), Status: record.StatusOK, Tool: &record.Tool{Name: "Read", Args: "{}"}})
	}
	nodes = append(nodes, &record.Node{Seq: 9, Kind: record.KindFinal, Agent: "main", Started: at(5000), Ended: at(5000), Status: record.StatusOK, Text: "done"})
	g, err := graph.Build(&record.Run{ID: "r", Started: t0, Ended: at(5000), Status: record.StatusOK, Source: record.Source{Format: "kimi-cli"}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	tl := timeline.Build((&mermaid.Config{}).Chart(g))
	var got []string
	for _, b := range tl.Lanes[0].Bars {
		if b.Group == "" {
			continue
		}
		got = append(got, b.Box+" "+b.Kind.String()+" "+strconv.Itoa(b.Slot)+"/"+strconv.Itoa(b.Slots)+" "+
			b.Start.Sub(t0).String()+".."+b.End.Sub(t0).String())
		if b.Group != "p2" {
			t.Errorf("%s: group %q, want p2", b.Box, b.Group)
		}
	}
	want := []string{
		"n3 tool 0/5 1s..2s", "n4 tool 1/5 1.1s..2.5s", "n5 tool 2/5 1.2s..3s", "n6 tool 3/5 1.3s..3.5s",
		"n7 collapsed 4/5 1.4s..4.5s", // n7 and n8, the rest
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("bars\n got %s\nwant %s", strings.Join(got, "; "), strings.Join(want, "; "))
	}
}
