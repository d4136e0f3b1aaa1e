package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/graph/graphtest"
)

// Whole-process benchmarks (DESIGN §12): the inspect command built as a
// user builds it, run as a process on a generated run of a realistic shape
// (graphtest.Realistic) at 10k, 100k and 1M nodes, next to the sqlite3
// command-line tool's scan of the same rows. Each iteration runs both; the
// benchmark reports the fastest of each (min is what a loaded 2-core machine
// measures most steadily), their peak RSS and the ratio. Run:
//
//	go test ./cmd/inspect -run '^$' -bench 'Process/(graph|audit)/100k' -benchtime 3x
//	go test ./cmd/inspect -run '^$' -bench 'Process/show/1M' -benchtime 5x
//	go test ./cmd/inspect -run '^$' -bench Startup -benchtime 20x
//
// The generated files are kept in $TMPDIR/inspect-bench
// (graphtest.RealisticFile).

var benchSizes = []struct {
	name  string
	nodes int
}{{"10k", 10_000}, {"100k", 100_000}, {"1M", 1_000_000}}

var buildOnce struct {
	sync.Once
	path string
	err  error
}

// builtInspect builds the inspect command once per test process.
func builtInspect(b testing.TB) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "inspect-bin")
		if err != nil {
			buildOnce.err = err
			return
		}
		buildOnce.path = filepath.Join(dir, "inspect")
		out, err := exec.Command("go", "build", "-o", buildOnce.path, ".").CombinedOutput()
		if err != nil {
			buildOnce.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildOnce.err != nil {
		b.Fatal(buildOnce.err)
	}
	return buildOnce.path
}

// measured is one process run: wall time, peak resident memory and CPU
// time (user and system, GNU time's: steadier than wall time on a shared
// machine).
type measured struct {
	wall time.Duration
	rss  int64 // bytes
	cpu  time.Duration
}

// runProcess runs name args with stdout discarded and returns its time and
// peak RSS; exit codes in ok are accepted. The peak RSS is what GNU time
// reports: a child's own rusage would include the (large) test binary it
// was forked from.
func runProcess(b testing.TB, ok []int, name string, args ...string) measured {
	b.Helper()
	timeBin, err := exec.LookPath("time")
	if _, statErr := os.Stat("/usr/bin/time"); statErr == nil {
		timeBin, err = "/usr/bin/time", nil
	}
	if err != nil {
		b.Skip("GNU time is not installed (apt-get install time; .ci/run installs it)")
	}
	rssFile := filepath.Join(b.TempDir(), "rss")
	cmd := exec.Command(timeBin, append([]string{"-f", "%M %U %S", "-o", rssFile, name}, args...)...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "OPENAI_API_KEY=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	err = cmd.Run()
	wall := time.Since(t0)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	accepted := false
	for _, c := range ok {
		accepted = accepted || c == code
	}
	if !accepted {
		b.Fatalf("%s %s: exit %d\n%s", name, strings.Join(args, " "), code, stderr.String())
	}
	out, err := os.ReadFile(rssFile)
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(out)) // after any "Command exited with …" line
	if len(f) < 3 {
		b.Fatalf("GNU time wrote %q", out)
	}
	kb, err := strconv.ParseInt(f[len(f)-3], 10, 64)
	user, uerr := strconv.ParseFloat(f[len(f)-2], 64)
	sys, serr := strconv.ParseFloat(f[len(f)-1], 64)
	if err = errors.Join(err, uerr, serr); err != nil {
		b.Fatalf("GNU time wrote %q: %v", out, err)
	}
	return measured{wall: wall, rss: kb * 1024, cpu: time.Duration((user + sys) * float64(time.Second))}
}

// scanSQL is the floor: every column inspect reads of the run's nodes, in
// sequence order, as the sqlite3 tool prints them.
func scanSQL(id string) string {
	return `SELECT seq, kind, branch, fork_seq, agent, depth, started_ns, ended_ns, status, error, name, calls, call_id,
		tokens_in, tokens_out, tokens_cached, tokens_cache_write, tokens_reasoning, fidelity, research, args, text, data
		FROM nodes WHERE run_id='` + id + `' ORDER BY seq`
}

func sqlite3CLI(b *testing.B) string {
	p, err := exec.LookPath("sqlite3")
	if err != nil {
		b.Skip("the sqlite3 command-line tool is not installed (apt-get install sqlite3; .ci/run installs it)")
	}
	return p
}

// BenchmarkProcess runs inspect graph, inspect audit (text and JSON) and
// inspect show as whole processes next to `sqlite3 FILE "SELECT … ORDER BY
// seq"` of the same rows; DESIGN §12 bars: graph and audit ≤ 3× the scan,
// memory linear, show ≤ 50 ms.
func BenchmarkProcess(b *testing.B) {
	commands := []struct {
		name string
		ok   []int
		args func(path, id string) []string
	}{
		{"graph", []int{0}, func(path, id string) []string { return []string{"graph", "--db", path, id} }},
		{"audit", []int{0, 1}, func(path, id string) []string { return []string{"audit", "--db", path, id} }},
		{"audit-json", []int{0, 1}, func(path, id string) []string { return []string{"audit", "--format", "json", "--db", path, id} }},
		{"show", []int{0}, func(path, id string) []string { return []string{"show", "--db", path, id, "n7"} }},
		{"cache", []int{0}, func(path, id string) []string { return []string{"cache", "--db", path, id} }},
	}
	for _, c := range commands {
		b.Run(c.name, func(b *testing.B) {
			for _, size := range benchSizes {
				b.Run(size.name, func(b *testing.B) {
					sqlite := sqlite3CLI(b)
					bin := builtInspect(b)
					path, id := graphtest.RealisticFile(b, size.nodes)
					args := c.args(path, id)
					floor, got := measured{wall: time.Hour}, measured{wall: time.Hour}
					b.ResetTimer()
					for b.Loop() {
						f := runProcess(b, []int{0}, sqlite, path, scanSQL(id))
						g := runProcess(b, c.ok, bin, args...)
						floor.wall, floor.rss = min(floor.wall, f.wall), max(floor.rss, f.rss)
						got.wall, got.rss = min(got.wall, g.wall), max(got.rss, g.rss)
					}
					b.ReportMetric(got.wall.Seconds()*1000, "inspect-ms")
					b.ReportMetric(floor.wall.Seconds()*1000, "sqlite3-ms")
					b.ReportMetric(float64(got.wall)/float64(floor.wall), "ratio")
					b.ReportMetric(float64(got.rss)/(1<<20), "inspect-MB")
					b.ReportMetric(float64(floor.rss)/(1<<20), "sqlite3-MB")
				})
			}
		})
	}
}

// BenchmarkCache100k runs `inspect cache` (the prompt-cache analysis of
// every request, as text) and `inspect graph` as whole processes on the
// realistic 100,000-node run with request bodies; issue 16's bar: cache ≤
// 3× graph. Run:
//
//	go test ./cmd/inspect -run '^$' -bench Cache100k -benchtime 3x
func BenchmarkCache100k(b *testing.B) {
	bin := builtInspect(b)
	path, id := graphtest.RealisticFile(b, 100_000)
	graph, cache := measured{wall: time.Hour}, measured{wall: time.Hour}
	for b.Loop() {
		g := runProcess(b, []int{0}, bin, "graph", "--db", path, id)
		c := runProcess(b, []int{0}, bin, "cache", "--db", path, id)
		graph.wall, graph.rss = min(graph.wall, g.wall), max(graph.rss, g.rss)
		cache.wall, cache.rss = min(cache.wall, c.wall), max(cache.rss, c.rss)
	}
	b.ReportMetric(cache.wall.Seconds()*1000, "cache-ms")
	b.ReportMetric(graph.wall.Seconds()*1000, "graph-ms")
	b.ReportMetric(float64(cache.wall)/float64(graph.wall), "ratio")
	b.ReportMetric(float64(cache.rss)/(1<<20), "cache-MB")
	b.ReportMetric(float64(graph.rss)/(1<<20), "graph-MB")
}

// BenchmarkStartup is the start of a command that draws nothing: `inspect
// runs --json` on an empty database file (DESIGN §12: ≤ 15 ms).
func BenchmarkStartup(b *testing.B) {
	bin := builtInspect(b)
	path := filepath.Join(b.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	best := measured{wall: time.Hour}
	for b.Loop() {
		m := runProcess(b, []int{0}, bin, "runs", "--json", "--db", path)
		best.wall, best.rss = min(best.wall, m.wall), max(best.rss, m.rss)
	}
	b.ReportMetric(best.wall.Seconds()*1000, "min-ms")
	b.ReportMetric(float64(best.rss)/(1<<20), "peak-MB")
}
