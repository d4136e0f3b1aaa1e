package runtime_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime"
	"github.com/inspect-dev/inspect/store"
)

// fanScript writes a script whose trunk forks one worker branch per latency.
func fanScript(t testing.TB, latencies ...time.Duration) string {
	var b strings.Builder
	b.WriteString("task: fan out\nconversations:\n  trunk:\n    - latency: 0s\n      calls:\n        - fork:\n            context: none\n            branches:\n")
	for i := range latencies {
		fmt.Fprintf(&b, "              - {name: b%d, agent: worker, instructions: part %d}\n", i+1, i+1)
	}
	b.WriteString("    - say: joined\n      latency: 0s\n")
	for i, l := range latencies {
		fmt.Fprintf(&b, "  b%d:\n    - say: part %d done\n      latency: %s\n", i+1, i+1, l)
	}
	path := filepath.Join(t.TempDir(), "script.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func realtimeRun(t testing.TB, ctx context.Context, script string) (*runtime.Result, *store.DB) {
	t.Helper()
	db := openDB(t)
	res, err := runtime.Run(ctx, runtime.Config{Project: filepath.Join("testdata", "http"), Script: script, DB: db, RunID: "testrun", Realtime: true})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, db
}

// TestJoinOrder: branches that finish in reverse order still join in
// declared order.
func TestJoinOrder(t *testing.T) {
	script := fanScript(t, 600*time.Millisecond, 400*time.Millisecond, 200*time.Millisecond)
	res, db := realtimeRun(t, context.Background(), script)
	ns := nodes(t, db, res.RunID)
	var finals []string
	for _, n := range ns {
		if n.Kind == record.KindFinal && n.Branch != "" {
			finals = append(finals, n.Branch)
		}
	}
	if strings.Join(finals, ",") != "b3,b2,b1" {
		t.Fatalf("branches finished in order %v, want b3,b2,b1 (the test needs reverse completion)\n%s", finals, outline(ns))
	}
	join := first(t, ns, "join", func(n *record.Node) bool { return n.Kind == record.KindJoin })
	var names []string
	for _, b := range join.Join.Branches {
		names = append(names, b.Name)
	}
	if strings.Join(names, ",") != "b1,b2,b3" {
		t.Errorf("join branches = %v, want declared order b1,b2,b3", names)
	}
	last := request(t, db, ns[len(ns)-2]) // the trunk's call after the join
	text := last.Messages[len(last.Messages)-1].Content
	want := "### b1 (ok)\npart 1 done\n\n### b2 (ok)\npart 2 done\n\n### b3 (ok)\npart 3 done"
	if text != want {
		t.Errorf("join result = %q, want %q", text, want)
	}
	if d := join.Join.Branches[0].Duration; d < 600*time.Millisecond {
		t.Errorf("b1 duration %s, want ≥ 600ms", d)
	}
}

// TestCancel: cancelling the context ends the run as cancelled, with no
// node left running.
func TestCancel(t *testing.T) {
	script := fanScript(t, 30*time.Second, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, db := realtimeRun(t, ctx, script)
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the cancelled run took %s", el)
	}
	if res.Status != record.StatusCancelled {
		t.Errorf("Status = %q, want cancelled", res.Status)
	}
	run, err := db.LoadRun(context.Background(), res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != record.StatusCancelled {
		t.Errorf("recorded run status = %q, want cancelled", run.Status)
	}
	ns := nodes(t, db, res.RunID)
	join := first(t, ns, "join", func(n *record.Node) bool { return n.Kind == record.KindJoin })
	if join.Join.Branches[0].Status != record.StatusCancelled || join.Join.Branches[1].Status != record.StatusOK {
		t.Errorf("join = %+v, want b1 cancelled, b2 ok", join.Join.Branches)
	}
	for _, n := range ns {
		if n.Status == record.StatusRunning {
			t.Errorf("n%d still running", n.Seq)
		}
	}
	trunkFinal := ns[len(ns)-1]
	if trunkFinal.Kind != record.KindFinal || trunkFinal.Branch != "" || trunkFinal.Status != record.StatusCancelled {
		t.Errorf("last node = %s [%s] %s, want the trunk's final, cancelled\n%s", trunkFinal.Kind, trunkFinal.Branch, trunkFinal.Status, outline(ns))
	}
}

// BenchmarkRealtimeFanout is DESIGN §12's bar: a --realtime fork of 8
// branches of 1s each should finish in ≤ 1.15s. It reports the elapsed
// time of the run and its ratio to 1s.
//
//	go test ./runtime -run '^$' -bench RealtimeFanout -benchtime 3x
func BenchmarkRealtimeFanout(b *testing.B) {
	lat := make([]time.Duration, 8)
	for i := range lat {
		lat[i] = time.Second
	}
	script := fanScript(b, lat...)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		db := openDB(b)
		start := time.Now()
		res, err := runtime.Run(context.Background(), runtime.Config{Project: filepath.Join("testdata", "http"), Script: script, DB: db, Realtime: true})
		total += time.Since(start)
		if err != nil || res.Status != record.StatusOK {
			b.Fatalf("Run: %v %+v", err, res)
		}
		b.Logf("recorded elapsed %s", res.Elapsed())
	}
	avg := total / time.Duration(b.N)
	b.ReportMetric(avg.Seconds(), "s/run")
	b.ReportMetric(avg.Seconds()/1.0, "ratio-to-1s")
}

// stamps records when each progress line (one per model call) is written.
type stamps struct {
	mu sync.Mutex
	at []time.Time
}

func (s *stamps) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range bytes.Count(p, []byte("\n")) {
		s.at = append(s.at, time.Now())
	}
	return len(p), nil
}

// BenchmarkCallOverhead is the time the runtime adds per model call of one
// conversation at step 10, 100 and 1,000 (DESIGN §12: flat): a scripted
// run (virtual time, so the wall time between two calls is all the
// runtime's: building the request, the scripted model's encoding and cache,
// the tool, recording both nodes) of 1,010 steps, each reading a file. It
// reports the median interval between successive calls around each step
// and the ratio of step 1,000's to step 10's.
//
//	go test ./runtime -run '^$' -bench CallOverhead -benchtime 3x
func BenchmarkCallOverhead(b *testing.B) {
	const steps = 1010
	var sb strings.Builder
	sb.WriteString("task: read everything\nconversations:\n  trunk:\n")
	for i := 0; i < steps; i++ {
		sb.WriteString("    - calls: [{read_file: {path: regions/eu.md}}]\n      latency: 10ms\n")
	}
	sb.WriteString("    - say: done\n")
	script := filepath.Join(b.TempDir(), "script.yaml")
	if err := os.WriteFile(script, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	around := func(at []time.Time, step int) time.Duration {
		var d []time.Duration
		for i := step - 5; i <= step+5; i++ {
			d = append(d, at[i].Sub(at[i-1]))
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	var at10, at100, at1000 []time.Duration
	for b.Loop() {
		db := openDB(b)
		s := &stamps{}
		res, err := runtime.Run(context.Background(), runtime.Config{Project: fixture("fanout-compact"), Script: script, DB: db, MaxSteps: steps + 1, Progress: s})
		if err != nil || res.Status != record.StatusOK {
			b.Fatalf("Run: %v %+v", err, res)
		}
		if len(s.at) < steps {
			b.Fatalf("%d progress lines, want one per call (%d)", len(s.at), steps+1)
		}
		at10 = append(at10, around(s.at, 10))
		at100 = append(at100, around(s.at, 100))
		at1000 = append(at1000, around(s.at, 1000))
	}
	slices.Sort(at10)
	slices.Sort(at100)
	slices.Sort(at1000)
	a, m, z := at10[len(at10)/2], at100[len(at100)/2], at1000[len(at1000)/2]
	b.ReportMetric(float64(a.Microseconds()), "µs/call@10")
	b.ReportMetric(float64(m.Microseconds()), "µs/call@100")
	b.ReportMetric(float64(z.Microseconds()), "µs/call@1000")
	b.ReportMetric(float64(z)/float64(a), "ratio")
}
