package otlp_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/store"
)

// synthetic builds traces of an agent span holding chat and tool spans
// with GenAI attributes and messages, spansPer spans a trace.
func synthetic(traces, spansPer, firstTrace int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "bench")
	ss := rs.ScopeSpans().AppendEmpty().Spans()
	t0 := time.Unix(1767225600, 0)
	for tr := 0; tr < traces; tr++ {
		var tid pcommon.TraceID
		tid[0], tid[1], tid[2] = byte(tr+firstTrace), byte((tr+firstTrace)>>8), byte((tr+firstTrace)>>16)
		tid[15] = 1
		root := ss.AppendEmpty()
		root.SetTraceID(tid)
		root.SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, 1})
		root.SetName("invoke_agent lead")
		root.SetStartTimestamp(pcommon.NewTimestampFromTime(t0))
		root.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(spansPer) * time.Second)))
		root.Attributes().PutStr("gen_ai.operation.name", "invoke_agent")
		root.Attributes().PutStr("gen_ai.agent.name", "lead")
		for i := 1; i < spansPer; i++ {
			s := ss.AppendEmpty()
			s.SetTraceID(tid)
			s.SetSpanID(pcommon.SpanID{0, 0, 0, 0, byte(i >> 16), byte(i >> 8), byte(i), 2})
			s.SetParentSpanID(root.SpanID())
			s.SetStartTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i) * time.Second)))
			s.SetEndTimestamp(pcommon.NewTimestampFromTime(t0.Add(time.Duration(i)*time.Second + 900*time.Millisecond)))
			a := s.Attributes()
			if i%2 == 1 {
				s.SetName("chat m1")
				a.PutStr("gen_ai.operation.name", "chat")
				a.PutStr("gen_ai.request.model", "m1")
				a.PutInt("gen_ai.usage.input_tokens", int64(100*i))
				a.PutInt("gen_ai.usage.output_tokens", 20)
				a.PutStr("gen_ai.input.messages", fmt.Sprintf(`[{"role":"user","parts":[{"type":"text","content":"Read region %d and total it."}]}]`, i))
				a.PutStr("gen_ai.output.messages", fmt.Sprintf(`[{"role":"assistant","parts":[{"type":"tool_call","id":"c%d","name":"read_file","arguments":"{\"path\":\"r%d.md\"}"}]}]`, i, i))
			} else {
				s.SetName("execute_tool read_file")
				a.PutStr("gen_ai.operation.name", "execute_tool")
				a.PutStr("gen_ai.tool.name", "read_file")
				a.PutStr("gen_ai.tool.call.id", fmt.Sprintf("c%d", i-1))
				a.PutStr("gen_ai.tool.call.arguments", fmt.Sprintf(`{"path":"r%d.md"}`, i-1))
				a.PutStr("gen_ai.tool.call.result", "revenue 4.2M in Q3; the rest of the file is about costs and staff")
			}
		}
	}
	return td
}

// BenchmarkImport compares reading a 100k-span OTLP/JSON lines file (1,000
// traces of 100 spans, 100 export requests a line each) into Sessions with
// pdata's own unmarshal of the same lines (the floor; bar: ≤ 3×).
func BenchmarkImport(b *testing.B) {
	file := filepath.Join(b.TempDir(), "100k.otlp.jsonl")
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	var m ptrace.JSONMarshaler
	for line := 0; line < 100; line++ {
		buf, err := m.MarshalTraces(synthetic(10, 100, line*10))
		if err != nil {
			b.Fatal(err)
		}
		f.Write(append(buf, '\n'))
	}
	f.Close()
	ctx := context.Background()
	pdata := func() {
		f, _ := os.Open(file)
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<28)
		var u ptrace.JSONUnmarshaler
		n := 0
		for sc.Scan() {
			td, err := u.UnmarshalTraces(sc.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			n += td.SpanCount()
		}
		if n != 100_000 {
			b.Fatalf("%d spans", n)
		}
	}
	imp := func() {
		ss, err := otlp.Format{}.Read(ctx, file, importers.Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(ss) != 1000 {
			b.Fatalf("%d sessions", len(ss))
		}
	}
	// Each iteration times both, one after the other, so a machine loaded
	// by something else slows both alike; the ratio is of the minimums.
	minP, minI := time.Duration(1<<62), time.Duration(1<<62)
	for i := 0; i < b.N; i++ {
		t := time.Now()
		pdata()
		if d := time.Since(t); d < minP {
			minP = d
		}
		t = time.Now()
		imp()
		if d := time.Since(t); d < minI {
			minI = d
		}
	}
	b.ReportMetric(float64(minP.Milliseconds()), "ms-pdata")
	b.ReportMetric(float64(minI.Milliseconds()), "ms-import")
	b.ReportMetric(float64(minI)/float64(minP), "x-pdata")
}

// BenchmarkReceiver sends 20,000 spans (400 traces of 50) as protobuf
// export requests of 500 spans to otel.Handler over loopback, recorded by
// Live into a store on disk, and reports spans/s to the last run written
// (bar: ≥ 5,000) and the heap in use after the flush.
func BenchmarkReceiver(b *testing.B) {
	ctx := context.Background()
	var bodies [][]byte
	var pm ptrace.ProtoMarshaler
	for batch := 0; batch < 40; batch++ {
		buf, err := pm.MarshalTraces(synthetic(10, 50, batch*10))
		if err != nil {
			b.Fatal(err)
		}
		bodies = append(bodies, buf)
	}
	for i := 0; i < b.N; i++ {
		db, err := store.Open(ctx, filepath.Join(b.TempDir(), "runs.db"))
		if err != nil {
			b.Fatal(err)
		}
		live := &otlp.Live{Spans: db, Write: func(ctx context.Context, s *importers.Session) (string, error) { return importers.Write(ctx, db, s) }}
		srv := httptest.NewServer(&otel.Handler{Consume: live.Consume})
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { live.Run(runCtx); close(done) }()
		start := time.Now()
		for _, body := range bodies {
			resp, err := http.Post(srv.URL+"/v1/traces", "application/x-protobuf", bytes.NewReader(body))
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("post: %v %v", resp, err)
			}
			resp.Body.Close()
		}
		stop()
		<-done
		elapsed := time.Since(start)
		srv.Close()
		runs, _ := db.Runs(ctx, 1000)
		if len(runs) != 400 {
			b.Fatalf("%d runs, want 400", len(runs))
		}
		var ms goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&ms)
		b.ReportMetric(20000/elapsed.Seconds(), "spans/s")
		b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "MiB-heap")
		db.Close()
	}
}
