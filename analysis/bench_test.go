package analysis_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/store"
)

// BenchmarkAudit100k splits `inspect audit` of the realistic 100,000-node
// run (graphtest.RealisticFile) in process: open is what the audit reads
// (graph.Load and the stored requests with the brief cache analysis, as
// `inspect graph` reads them), the floor of the rules; rules is the audit
// of the opened run (every rule, the findings' prices and grades). Each
// reports its least CPU time of this process (cpu-ms: other processes on a
// loaded machine count little) beside the wall time. Run:
//
//	go test ./analysis -run '^$' -bench Audit100k -benchtime 5x
//
// A CPU profile of the rules alone: -bench Audit100k/rules -cpuprofile FILE.
func BenchmarkAudit100k(b *testing.B) {
	path, id := graphtest.RealisticFile(b, 100_000)
	ctx := context.Background()
	db, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	an := analysis.New(storesrc.New(db), nil)
	open := func(b *testing.B) *analysis.Run {
		r, err := an.Open(ctx, id, analysis.LoadBrief)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.BriefCache(ctx); err != nil {
			b.Fatal(err)
		}
		return r
	}
	b.Run("open", func(b *testing.B) {
		best := time.Duration(1<<63 - 1)
		for b.Loop() {
			t0 := cpuTime(b)
			open(b)
			best = min(best, cpuTime(b)-t0)
		}
		b.ReportMetric(float64(best)/1e6, "cpu-ms")
	})
	b.Run("rules", func(b *testing.B) {
		r := open(b)
		cfg := analysis.AuditConfig(r)
		best := time.Duration(1<<63 - 1)
		findings := 0
		for b.Loop() {
			t0 := cpuTime(b)
			rep, err := cfg.Audit(r.Graph)
			if err != nil {
				b.Fatal(err)
			}
			best = min(best, cpuTime(b)-t0)
			findings = len(rep.Findings)
		}
		b.ReportMetric(float64(best)/1e6, "cpu-ms")
		b.ReportMetric(float64(findings), "findings")
	})
}

// cpuTime is the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
