package mermaid

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	goldenfile "github.com/inspect-dev/inspect/internal/golden"

	"github.com/inspect-dev/inspect/mermaid/mermaidtest"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graphjson"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

type format struct {
	ext   string
	print func(io.Writer, *graph.Run) error
}

var formats = []format{
	{".mmd", Fprint},
	{".dot", FprintDOT},
	{".json", graphjson.Fprint}, // package graphjson's, kept beside the drawings
}

func render(t testing.TB, f func(io.Writer, *graph.Run) error, g *graph.Run) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := f(&buf, g); err != nil {
		t.Fatalf("render %s: %v", g.ID, err)
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	for _, tt := range testRuns(t) {
		for _, f := range formats {
			t.Run(tt.name+f.ext, func(t *testing.T) {
				got := render(t, f.print, tt.g)
				if again := render(t, f.print, tt.g); !bytes.Equal(got, again) {
					t.Fatalf("two renderings of %s differ:\n%s", tt.name, goldenfile.Diff(got, again))
				}
				golden(t, tt.name+f.ext, got)
			})
		}
	}
}

// TestFanout asserts the facts DESIGN §7 names, beyond the golden.
func TestFanout(t *testing.T) {
	out := string(render(t, Fprint, fanoutRun(t)))
	for _, want := range []string{
		"%% run 7f3a9c2e41d0 · ok · 27.5s · agents analyst, researcher, billing\n",
		"%% agent billing · started as analyst\n",
		"%% tokens in 14212 · out 780 · cached 6360 (reported) · calls 10\n",
		"%% branches\n%%   n19 waited for eu=ok 8.1s, us=ok 21.7s slowest, apac=error 2.0s\n",
		"%% tools\n%%   fork x1 · read_file x5 · transfer_to_billing x1 · research: 1 before fork, 4 in branches, 0 after\n",
		"flowchart TD\n",
		`  n1["user: Compare Q3 revenue across EU, US and APAC and say which reg…"]` + "\n",
		`  n2["llm @analyst · calls read_file · in 1210 out 31 · 1.2s"]` + "\n",
		`  n3["tool read_file regions/index.md"]` + "\n",
		`  n4["llm · calls fork · in 1402 out 96 · 1.0s"]` + "\n",
		`  n5["fork (compact context) eu, us, apac"]` + "\n",
		`  subgraph b1["branch eu @researcher · ok · 8.1s"]` + "\n",
		`    n6["llm @researcher · calls read_file x2 · in 800 out 40 · 1.0s"]` + "\n",
		`  subgraph b2["branch us · ok · 21.7s · slowest"]` + "\n",
		`  subgraph b3["branch apac · error · 2.0s"]` + "\n",
		`  n19["join eu=ok, us=ok, apac=error"]` + "\n",
		`  n21["handoff analyst to billing"]` + "\n",
		`  n22["llm @billing · answers · in 2900 out 210 · 2.2s"]` + "\n",
		"  n5 --> n6\n", "  n5 --> n11\n", "  n5 --> n17\n",
		"  n10 --> n19\n", "  n16 --> n19\n", "  n18 --> n19\n",
		"  class n17,n18,b3 error\n",
		"  class b2 slowest\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if n := strings.Count(out, "· slowest"); n != 1 {
		t.Errorf("%d branches marked slowest, want exactly 1", n)
	}
	if n := strings.Count(out, "@analyst"); n != 1 {
		t.Errorf("@analyst appears %d times, want once (its first node)", n)
	}
	if strings.Contains(out, "%% collapsed") {
		t.Errorf("a small run was collapsed:\n%s", out)
	}
}

func TestHeader_NoHandoffNoCache(t *testing.T) {
	out := string(render(t, Fprint, nestedRun(t)))
	for _, want := range []string{
		"%% agent planner\n",
		"cached not reported",
		"%%   n12 waited for fr=ok 2.0s, de=ok 3.1s slowest\n%%   n17 waited for europe=ok 4.4s slowest, us=ok 2.0s\n",
		`subgraph b1["branch europe @researcher · ok · 4.4s · slowest"]`,
		`    subgraph b3["branch fr · ok · 2.0s"]`,
		`n5["fork (none context) fr, de"]`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	if strings.Contains(out, "started as") {
		t.Errorf("no hand-off happened, yet the header says 'started as'")
	}
	if n := strings.Count(out, "slowest\"]"); n != 2 {
		t.Errorf("%d subgraphs marked slowest, want 2 (one per fork)", n)
	}
}

func TestInterrupted(t *testing.T) {
	out := string(render(t, Fprint, interruptedRun(t)))
	for _, want := range []string{
		"%% run dead00000001 · interrupted ·",
		"%%   n3 forked, no join: a=ok 800ms, b=interrupted 800ms\n", // b ran at least until the run's last moment
		`subgraph b2["branch b · interrupted · 800ms"]`,
		"class n6,b2 error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n%s", want, out)
		}
	}
	// With b cut off, which branch the join would have waited for is not
	// known: none is marked slowest (DESIGN §8, issue 12), in Mermaid and DOT.
	if strings.Contains(out, "slowest") {
		t.Errorf("an open fork of an interrupted run marks a branch slowest:\n%s", out)
	}
	if dot := string(render(t, FprintDOT, interruptedRun(t))); strings.Contains(dot, "slowest") || strings.Contains(dot, colorSlowest) {
		t.Errorf("DOT marks a branch of the open fork slowest:\n%s", dot)
	}
}

// lineRE is every line a chart may contain; a label holds no raw quote.
var lineRE = regexp.MustCompile(`^(%% .*|flowchart TD|\s+(n\d+|b\d+)\["[^"\n]+"\]|\s+subgraph b\d+\["[^"\n]+"\]|\s+end|\s+n\d+ --> n\d+|\s+classDef (error|slowest|collapsed) [^"]+|\s+class [nb0-9,]+ (error|slowest|collapsed))$`)

// TestHostile checks, without the real parser, that hostile text stays
// inside its labels: every line has an expected shape and no directive,
// raw quote, bracket-closing or line break escapes.
func TestHostile(t *testing.T) {
	out := string(render(t, Fprint, hostileRun(t)))
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !lineRE.MatchString(line) {
			t.Errorf("line %d has an unexpected shape: %q", i+1, line)
		}
	}
	for _, bad := range []string{"%%{", "<script", "`", "$$", "\r", "\x01", "\uFFFE", `\n`} {
		if strings.Contains(out, bad) {
			t.Errorf("output contains %q", bad)
		}
	}
	if n := strings.Count(out, "\n  end\n"); n != 3 {
		t.Errorf("%d top-level subgraph ends, want 3 (one per branch)", n)
	}
	if !strings.Contains(out, "日本語 😀") {
		t.Errorf("unicode text was not kept")
	}
}

func TestConfig_Collapse(t *testing.T) {
	g := repeatedRun(t)
	full := string(render(t, (&Config{Full: true}).Fprint, g))
	if strings.Contains(full, "collapsed") || strings.Count(full, "-->") != 62 {
		t.Errorf("Full: want every node and 62 edges, got %d edges:\n%s", strings.Count(full, "-->"), full)
	}
	small := string(render(t, (&Config{MaxEdges: 20}).Fprint, g))
	for _, want := range []string{
		`n2["read_file x30 @analyst · 30 llm calls in 53250 out 600 · 10.2s · n2..n61"]`,
		"%% collapsed to stay under 20 edges and 50000 characters: 1 runs of repeated calls folded (60 nodes); --full draws every node\n",
		"class n2 collapsed",
		"n1 --> n2\n  n2 --> n62\n",
	} {
		if !strings.Contains(small, want) {
			t.Errorf("collapsed output lacks %q\n%s", want, small)
		}
	}
}

func TestConfig_CollapseBranches(t *testing.T) {
	g := nestedRun(t)
	out := string(render(t, (&Config{MaxEdges: 12}).Fprint, g))
	if !strings.Contains(out, "branches summarized") || !strings.Contains(out, "fork x1") {
		t.Errorf("want the nested fork summarized:\n%s", out)
	}
	if e := strings.Count(out, "-->"); e > 12 {
		t.Errorf("%d edges, want at most 12", e)
	}
}

const bigNodes = 100_000

// TestBigRun renders a 100,000-node run under GitHub's limits.
func TestBigRun(t *testing.T) {
	g := bigRun(t, bigNodes)
	if len(g.Nodes) < bigNodes {
		t.Fatalf("built %d nodes, want at least %d", len(g.Nodes), bigNodes)
	}
	out := render(t, Fprint, g)
	if n := textSize(out); n > DefaultMaxTextSize {
		t.Errorf("%d characters, want at most %d", n, DefaultMaxTextSize)
	}
	if e := bytes.Count(out, []byte("-->")); e > DefaultMaxEdges {
		t.Errorf("%d edges, want at most %d", e, DefaultMaxEdges)
	}
	if !bytes.Contains(out, []byte("\n%% collapsed to stay under 500 edges and 50000 characters: ")) {
		t.Errorf("no %%%% collapsed line:\n%s", out[:min(len(out), 2000)])
	}
	dot := render(t, FprintDOT, g)
	if e := bytes.Count(dot, []byte(" -> ")); e > DefaultMaxEdges {
		t.Errorf("DOT: %d edges, want the same collapsing as Mermaid", e)
	}
}

// TestMermaidParses runs every Mermaid output of this package's tests
// through the real Mermaid parser, in one invocation.
func TestMermaidParses(t *testing.T) {
	files := map[string][]byte{}
	for _, tt := range testRuns(t) {
		files[tt.name+".mmd"] = render(t, Fprint, tt.g)
		files[tt.name+"-full.mmd"] = render(t, (&Config{Full: true}).Fprint, tt.g)
		files[tt.name+"-tiny.mmd"] = render(t, (&Config{MaxEdges: 8, MaxTextSize: 2000}).Fprint, tt.g)
	}
	for _, r := range fixtureRuns(t) {
		files["fixture-"+r.name+".mmd"] = render(t, r.formats()[0].print, r.g)
	}
	files["big.mmd"] = render(t, Fprint, bigRun(t, bigNodes))
	var labels bytes.Buffer
	labels.WriteString("flowchart TD\n")
	for i, s := range escapeSeeds {
		fmt.Fprintf(&labels, "  n%d[\"%s\"]\n", i+1, Escape(s))
		fmt.Fprintf(&labels, "  subgraph b%d[\"%s\"]\n    m%d[\"x\"]\n  end\n", i+1, Escape(s), i+1)
	}
	files["escape-seeds.mmd"] = labels.Bytes()
	for i, s := range escapeSeeds {
		// Each seed also alone, in a comment and a label, so one failure
		// cannot hide another.
		files[fmt.Sprintf("seed-%02d.mmd", i)] = []byte("%% agent " + Escape(s) + "\nflowchart TD\n  n1[\"" + Escape(s) + "\"]\n")
	}
	mermaidtest.Check(t, files)
}

// failWriter accepts n bytes, then fails.
type failWriter struct {
	n       int
	written int
	calls   int
}

var errFull = errors.New("disk full")

func (w *failWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.written >= w.n {
		return 0, errFull
	}
	k := min(len(p), w.n-w.written)
	w.written += k
	if k < len(p) {
		return k, errFull
	}
	return k, nil
}

func TestFprint_WriteError(t *testing.T) {
	g := fanoutRun(t)
	for _, f := range formats {
		size := len(render(t, f.print, g))
		for _, n := range []int{0, 1, 100, size / 2, size - 1} {
			t.Run(fmt.Sprintf("%s/%d", f.ext, n), func(t *testing.T) {
				w := &failWriter{n: n}
				err := f.print(w, g)
				if !errors.Is(err, errFull) {
					t.Fatalf("error = %v, want %v", err, errFull)
				}
				if w.written > n {
					t.Errorf("wrote %d bytes past the failure", w.written-n)
				}
			})
		}
	}
}

func TestFprintJSON_Schema(t *testing.T) {
	var got graphjson.Graph
	if err := json.Unmarshal(render(t, graphjson.Fprint, fanoutRun(t)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != graphjson.Schema || len(got.Nodes) != 23 || len(got.Forks) != 1 || len(got.Forks[0].Branch) != 3 {
		t.Fatalf("schema %q, %d nodes, %d forks", got.Schema, len(got.Nodes), len(got.Forks))
	}
	if f := got.Forks[0]; f.Slowest != "us" || !f.Branch[1].Slowest || f.Join == nil || *f.Join != "n19" {
		t.Errorf("fork = %+v, want us slowest and join n19", f)
	}
	if !got.Nodes[1].Marked || got.Nodes[0].Marked {
		t.Errorf("marked: n1=%v n2=%v, want the llm n2 marked", got.Nodes[0].Marked, got.Nodes[1].Marked)
	}
	if got.Tokens.Cached == nil || *got.Tokens.Cached != 6360 {
		t.Errorf("tokens.cached = %v, want 6360", got.Tokens.Cached)
	}
	if len(got.Edges) != 24 {
		t.Errorf("%d edges, want 24", len(got.Edges))
	}
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldenfile.Check(t, name, got, *update)
}
