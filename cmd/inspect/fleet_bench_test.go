package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/inspect-dev/inspect/importers/jaeger"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

// BenchmarkFleetJaeger: N runs (INSPECT_FLEET_BENCH_N, default 1000)
// pulled from a real Jaeger: copies of the audit-handoff-loop fixture's
// trace under a service of their own, 100ms apart, are sent to Jaeger's
// OTLP port (one request a trace), then timed: Jaeger's own fetch of them
// — the searches alone, each window holding half a search's depth, bodies
// read and dropped (Jaeger's search answers with whole traces: the least
// its API serves them in), and one GET a trace —, inspect import --from
// jaeger of them, and inspect fleet over the imported runs; the heap's
// peak (sampled every 5ms) during the import and the fleet audit. Jaeger
// must hold N traces and more: .ci/jaeger/config-bench.yaml holds 30,000
// (the CI config 10,000).
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
	// one run's trace, as inspect exports it, as one OTLP/JSON document
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
	whole := ptrace.NewTraces()
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		td, err := otel.UnmarshalJSON(sc.Bytes())
		if err != nil {
			b.Fatal(err)
		}
		td.ResourceSpans().MoveAndAppendTo(whole.ResourceSpans())
	}
	doc, err := (&ptrace.JSONMarshaler{}).MarshalTraces(whole)
	if err != nil {
		b.Fatal(err)
	}
	var orig string
	if i := bytes.Index(doc, []byte(`"traceId":"`)); i >= 0 {
		orig = string(doc[i+11 : i+43])
	}
	var first int64 = 1 << 62
	for _, m := range bytesAll(doc, `"startTimeUnixNano":"`) {
		if v, _ := strconv.ParseInt(m, 10, 64); v > 0 && v < first {
			first = v
		}
	}
	service := fmt.Sprintf("fleet-bench-%d", time.Now().UnixNano())
	template := strings.ReplaceAll(string(doc), `{"key":"service.name","value":{"stringValue":"inspect"}}`, `{"key":"service.name","value":{"stringValue":"`+service+`"}}`)
	const gap = 100 * time.Millisecond
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	ids := make([]string, n)
	for i := range n {
		ids[i] = fmt.Sprintf("%032x", uint64(time.Now().UnixNano())<<20|uint64(i))
		body := shiftTimes(strings.ReplaceAll(template, orig, ids[i]), start.Add(time.Duration(i)*gap).UnixNano()-first)
		resp, err := http.Post(strings.TrimSuffix(otlpURL, "/")+"/v1/traces", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("otlp: %s", resp.Status)
		}
	}
	// wait until Jaeger holds them: the last sent, then every 100th
	c := &jaeger.Client{Base: query}
	has := func(id string) bool { _, err := c.Trace(ctx, id); return err == nil }
	for deadline := time.Now().Add(5 * time.Minute); !has(ids[n-1]); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.Fatalf("jaeger does not hold the last trace sent after 5 minutes")
		}
	}
	time.Sleep(time.Second) // the batch processor's last spans
	for i := 0; i < n; i += 100 {
		if !has(ids[i]) {
			b.Fatalf("jaeger lacks trace %d of %d: it keeps fewer traces than that (max_traces; .ci/jaeger/config-bench.yaml keeps 30,000)", i, n)
		}
	}

	// Jaeger's own fetch: the searches alone, half a depth a window
	get := func(path string) int64 {
		resp, err := http.Get(strings.TrimSuffix(query, "/") + path)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		m, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			b.Fatalf("GET %s: %s", path, resp.Status)
		}
		return m
	}
	per := jaeger.DefaultDepth / 2
	t0 := time.Now()
	var searchBytes int64
	for i := 0; i < n; i += per {
		from, to := start.Add(time.Duration(i)*gap), start.Add(time.Duration(min(i+per, n))*gap)
		v := url.Values{"query.service_name": {service}, "query.start_time_min": {from.UTC().Format(time.RFC3339Nano)},
			"query.start_time_max": {to.Add(-time.Nanosecond).UTC().Format(time.RFC3339Nano)},
			"query.num_traces":     {strconv.Itoa(jaeger.DefaultDepth)}, "query.search_depth": {strconv.Itoa(jaeger.DefaultDepth)}}
		searchBytes += get("/api/v3/traces?" + v.Encode())
	}
	searchFetch := time.Since(t0)
	t0 = time.Now()
	var bytesRead int64
	for _, id := range ids {
		bytesRead += get("/api/v3/traces/" + id)
	}
	getFetch := time.Since(t0)
	if searchBytes < bytesRead*9/10 {
		b.Fatalf("the searches read %d bytes, the GETs %d: the searches did not answer with the traces whole", searchBytes, bytesRead)
	}

	dst, _, dstErr := testFactory(b)
	var peakImport, peakFleet uint64
	t1 := time.Now()
	peak(&peakImport, func() {
		if code := run(ctx, dst, []string{"import", "--from", "jaeger", query, "--service", service, "--since", start.Add(-time.Minute).Format(time.RFC3339Nano), "--db", dst.DBPath}); code != ExitOK {
			b.Fatalf("import: exit %d: %s", code, dstErr)
		}
	})
	imp := time.Since(t1)
	if !strings.Contains(dstErr.String(), fmt.Sprintf(" %d imported", n)) {
		b.Fatalf("import:\n%s", dstErr)
	}
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
	b.ReportMetric(float64(n), "runs")
	b.ReportMetric(float64(n)/searchFetch.Seconds(), "jaeger_search_runs/s")
	b.ReportMetric(float64(n)/getFetch.Seconds(), "jaeger_get_runs/s")
	b.ReportMetric(float64(n)/imp.Seconds(), "import_runs/s")
	b.ReportMetric(float64(n)/fl.Seconds(), "fleet_runs/s")
	b.ReportMetric(float64(peakImport)/(1<<20), "import_peak_heap_MiB")
	b.ReportMetric(float64(peakFleet)/(1<<20), "fleet_peak_heap_MiB")
	b.ReportMetric(float64(bytesRead)/float64(n)/1024, "KiB/trace")
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
