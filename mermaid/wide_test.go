package mermaid

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/mermaid/mermaidtest"
	"github.com/inspect-dev/inspect/record"
)

// wideRun is graphtest.WideFork(n) as a graph.
func wideRun(t testing.TB, n int) *graph.Run {
	t.Helper()
	nodes := graphtest.WideFork(n)
	g, err := graph.Build(&record.Run{ID: "wide", Status: record.StatusOK, Started: graphtest.Start, Ended: nodes[len(nodes)-1].Ended}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestWideFork: a fork of 300 branches gave 57,981 characters and 604
// edges of Mermaid that GitHub refuses, although the header said
// collapsed (issue 11, defect 6). Its branches beyond the first few are
// now one group node with their statuses; the slowest branch stays drawn;
// Mermaid and DOT collapse alike, and the chart parses.
func TestWideFork(t *testing.T) {
	files := map[string][]byte{}
	for _, n := range []int{300, 10_000} {
		g := wideRun(t, n)
		out := render(t, Fprint, g)
		if size := textSize(out); size > DefaultMaxTextSize {
			t.Errorf("%d branches: %d characters, want at most %d", n, size, DefaultMaxTextSize)
		}
		if e := bytes.Count(out, []byte(" --> ")); e > DefaultMaxEdges {
			t.Errorf("%d branches: %d edges, want at most %d", n, e, DefaultMaxEdges)
		}
		s := string(out)
		slowest := fmt.Sprintf("r%d", n/2+1)
		if want := "branch " + slowest + " · ok · 1m00s · slowest"; !strings.Contains(s, want) {
			t.Errorf("%d branches: the slowest branch is not drawn (%q):\n%.3000s", n, want, s)
		}
		group := regexp.MustCompile(fmt.Sprintf(`\["(\d+) more branches b\d+\.\.b%d · ok (\d+), error (\d+) · slowest of them r\d+ `, n))
		m := group.FindStringSubmatch(s)
		if m == nil {
			t.Fatalf("%d branches: no group node with the statuses of the rest:\n%.3000s", n, s)
		}
		grouped, ok, failed := atoi(m[1]), atoi(m[2]), atoi(m[3])
		if ok+failed != grouped || failed == 0 || grouped < n-50 {
			t.Errorf("%d branches: group of %d with ok %d, error %d", n, grouped, ok, failed)
		}
		if !strings.Contains(s, "wide forks drawn as one node each") {
			t.Errorf("%d branches: the %%%% collapsed line does not say so", n)
		}
		dot := render(t, FprintDOT, g)
		if e := bytes.Count(dot, []byte(" -> ")); e > DefaultMaxEdges {
			t.Errorf("%d branches: DOT has %d edges; want it collapsed as Mermaid is", n, e)
		}
		if len(dot) > 200_000 {
			t.Errorf("%d branches: %d bytes of DOT; want it bounded like the chart", n, len(dot))
		}
		files[fmt.Sprintf("wide-%d.mmd", n)] = out
		full := render(t, (&Config{Full: true}).Fprint, g)
		if got := bytes.Count(full, []byte("subgraph b")); got != n {
			t.Errorf("--full draws %d branch subgraphs, want all %d", got, n)
		}
	}
	mermaidtest.Check(t, files)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
