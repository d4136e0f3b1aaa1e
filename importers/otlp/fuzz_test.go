package otlp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/importers/otlp"
)

// FuzzRead reads any bytes as an OTLP file — JSON lines, one JSON document
// or protobuf, whatever pdata and the line reader make of them — both
// whole (Read) and through the stream inspect import uses (Stream, then
// collected): nothing panics, and a read without error gives sessions each
// with a trunk, which the importers' test helpers walk whole. Seeds: the
// small fixtures of the AI SDK, LangGraph map-reduce and Mastra (lines),
// the AI SDK's protobuf, and hand-made spans whose parents loop, nest a
// fork under itself, or carry out-of-range times and ids.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"aisdk.otlp.jsonl", "langgraph-mapreduce.otlp.jsonl", "mastra-workflow.otlp.jsonl", "aisdk.otlp.pb"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	span := func(id, parent, name, attrs string, start, end string) string {
		return `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"` + id + `","parentSpanId":"` + parent +
			`","name":"` + name + `","startTimeUnixNano":"` + start + `","endTimeUnixNano":"` + end + `","attributes":[` + attrs + `]}`
	}
	doc := func(spans ...string) string {
		return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"scope":{"name":"ai"},"spans":[` +
			strings.Join(spans, ",") + `]}]}]}`
	}
	f.Add([]byte(doc(
		span("0000000000000001", "0000000000000002", "ai.generateText", `{"key":"gen_ai.usage.input_tokens","value":{"intValue":"-3"}}`, "5", "1"),
		span("0000000000000002", "0000000000000001", "invoke_agent", `{"key":"gen_ai.agent.name","value":{"stringValue":"\u001b[2J"}}`, "18446744073709551615", "0"),
	) + "\n" + doc(
		span("0000000000000003", "0000000000000003", "execute_tool", `{"key":"gen_ai.tool.name","value":{"intValue":"9"}}`, "1", "2"),
	) + "\n{not json\n"))
	f.Add([]byte(doc(span("", "", "x", "", "", ""))))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		path := filepath.Join(t.TempDir(), "t.otlp.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		(otlp.Format{}).Detect(path)
		ctx := context.Background()
		for _, strict := range []bool{false, true} {
			opt := importers.Options{Strict: strict}
			whole, wholeErr := (otlp.Format{}).Read(ctx, path, opt)
			if wholeErr == nil {
				importerstest.Walk(t, whole)
			}
			streamed, err := importers.Collected((otlp.Format{}).Stream(ctx, path, opt))
			if err == nil {
				importerstest.Walk(t, streamed)
			}
			if err == nil && len(streamed) != len(whole) {
				t.Fatalf("stream gave %d runs, Read %d", len(streamed), len(whole))
			}
		}
	})
}
