package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers/jaeger"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// BenchmarkFleetJaeger: N runs (INSPECT_FLEET_BENCH_N, default 1000)
// pulled from a real Jaeger: copies of the audit-handoff-loop fixture's
// trace under a service of their own are sent to Jaeger's OTLP port, then
// timed: Jaeger's own fetch of them (the searches and one GET a trace,
// bodies read and dropped), inspect import --from jaeger of them, and
// inspect fleet over the imported runs; the heap's peak (sampled every
// 5ms) during the import and the fleet audit.
//
//	INSPECT_JAEGER_OTLP=… INSPECT_JAEGER_QUERY=… go test ./cmd/inspect -run '^$' -bench FleetJaeger -benchtime 1x
func BenchmarkFleetJaeger(b *testing.B) {
	otlpURL, query := os.Getenv("INSPECT_JAEGER_OTLP"), os.Getenv("INSPECT_JAEGER_QUERY")
	if otlpURL == "" || query == "" {
		b.Skip("no Jaeger: .ci/run starts one and sets INSPECT_JAEGER_OTLP and INSPECT_JAEGER_QUERY")
	}
	n := 1000
	if v, err := strconv.Atoi(os.Getenv("INSPECT_FLEET_BENCH_N")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	// one run's trace, as inspect exports it
	src, srcOut, _ := testFactory(b)
	dir := filepath.Join(b.TempDir(), "fx")
	if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", "audit-handoff-loop"), dir); err != nil {
		b.Fatal(err)
	}
	if code := run(ctx, src, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--db", src.DBPath}); code != ExitOK {
		b.Fatalf("run: exit %d", code)
	}
	file := filepath.Join(b.TempDir(), "t.jsonl")
	if code := run(ctx, src, []string{"export", "--format", "otlp", "-o", file, "--db", src.DBPath}); code != ExitOK {
		b.Fatalf("export: exit %d: %s", code, srcOut)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	service := fmt.Sprintf("fleet-bench-%d", time.Now().UnixNano())
	start := time.Now().Add(-time.Hour)
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
	}
	var orig string
	if i := bytes.Index(raw, []byte(`"traceId":"`)); i >= 0 {
		orig = string(raw[i+11 : i+43])
	}
	var first int64 = 1 << 62
	for _, l := range lines {
		for _, m := range bytesAll(l, `"startTimeUnixNano":"`) {
			if v, _ := strconv.ParseInt(m, 10, 64); v > 0 && v < first {
				first = v
			}
		}
	}
	send := func(body []byte) {
		resp, err := http.Post(strings.TrimSuffix(otlpURL, "/")+"/v1/traces", "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("otlp: %s", resp.Status)
		}
	}
	for i := range n {
		id := fmt.Sprintf("%032x", uint64(time.Now().UnixNano())<<20|uint64(i))
		shift := start.Add(time.Duration(i)*100*time.Millisecond).UnixNano() - first
		for _, l := range lines {
			s := strings.ReplaceAll(string(l), orig, id)
			s = strings.Replace(s, `{"key":"service.name","value":{"stringValue":"inspect"}}`, `{"key":"service.name","value":{"stringValue":"`+service+`"}}`, 1)
			s = shiftTimes(s, shift)
			send([]byte(s))
		}
	}
	// wait for Jaeger to hold them all
	c := &jaeger.Client{Base: query} // the default depth, as inspect import uses
	q := jaeger.Query{Service: service}
	list := func() int {
		got := 0
		c.Search(ctx, q, start.Add(-time.Minute), time.Now().Add(time.Minute), func(f []jaeger.Found) error { got += len(f); return nil })
		return got
	}
	for deadline := time.Now().Add(5 * time.Minute); list() < n; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("jaeger holds %d of %d traces after 2 minutes", list(), n)
		}
	}
	time.Sleep(time.Second) // the batch processor's last spans

	// Jaeger's own fetch: the searches and one GET a trace
	t0 := time.Now()
	var ids []string
	var bytesRead int64
	seen := map[string]bool{} // a trace across two windows is listed in both
	c.Search(ctx, q, start.Add(-time.Minute), time.Now().Add(time.Minute), func(f []jaeger.Found) error {
		for _, x := range f {
			if !seen[x.ID] {
				seen[x.ID] = true
				ids = append(ids, x.ID)
			}
		}
		return nil
	})
	for _, id := range ids {
		body, err := c.Trace(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		bytesRead += int64(len(body))
	}
	fetch := time.Since(t0)

	dst, _, dstErr := testFactory(b)
	var peakImport, peakFleet uint64
	t1 := time.Now()
	peak(&peakImport, func() {
		if code := run(ctx, dst, []string{"import", "--from", "jaeger", query, "--service", service, "--since", start.Add(-time.Minute).Format(time.RFC3339Nano), "--db", dst.DBPath}); code != ExitOK {
			b.Fatalf("import: exit %d: %s", code, dstErr)
		}
	})
	imp := time.Since(t1)
	b.ResetTimer()
	var fl time.Duration
	for b.Loop() {
		t2 := time.Now()
		peak(&peakFleet, func() {
			if code := run(ctx, dst, []string{"fleet", "--format", "json", "--db", dst.DBPath}); code != ExitOK {
				b.Fatalf("fleet: exit %d: %s", code, dstErr)
			}
		})
		fl = time.Since(t2)
	}
	b.ReportMetric(float64(len(ids)), "runs")
	b.ReportMetric(float64(len(ids))/fetch.Seconds(), "jaeger_fetch_runs/s")
	b.ReportMetric(float64(len(ids))/imp.Seconds(), "import_runs/s")
	b.ReportMetric(float64(len(ids))/fl.Seconds(), "fleet_runs/s")
	b.ReportMetric(float64(peakImport)/(1<<20), "import_peak_heap_MiB")
	b.ReportMetric(float64(peakFleet)/(1<<20), "fleet_peak_heap_MiB")
	b.ReportMetric(float64(bytesRead)/float64(len(ids))/1024, "KiB/trace")
}

// peak runs fn, keeping in *max the largest heap in use seen meanwhile.
func peak(max *uint64, fn func()) {
	runtime.GC()
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for !stop.Load() {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > *max {
				*max = ms.HeapInuse
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	fn()
	stop.Store(true)
	<-done
}

func bytesAll(l []byte, prefix string) []string {
	var out []string
	s := string(l)
	for {
		i := strings.Index(s, prefix)
		if i < 0 {
			return out
		}
		s = s[i+len(prefix):]
		j := strings.IndexByte(s, '"')
		out = append(out, s[:j])
		s = s[j:]
	}
}

// shiftTimes adds d nanoseconds to every span and event time of s.
func shiftTimes(s string, d int64) string {
	for _, key := range []string{`"startTimeUnixNano":"`, `"endTimeUnixNano":"`, `"timeUnixNano":"`} {
		var b strings.Builder
		rest := s
		for {
			i := strings.Index(rest, key)
			if i < 0 {
				b.WriteString(rest)
				break
			}
			b.WriteString(rest[:i+len(key)])
			rest = rest[i+len(key):]
			j := strings.IndexByte(rest, '"')
			v, _ := strconv.ParseInt(rest[:j], 10, 64)
			b.WriteString(strconv.FormatInt(v+d, 10))
			rest = rest[j:]
		}
		s = b.String()
	}
	return s
}
