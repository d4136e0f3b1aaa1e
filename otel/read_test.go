package otel

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Jaeger's {"result": …} answer reads as the document inside it, parsed
// once, however it is spaced; a wrapper with another member still reads
// (the slow path).
func TestUnmarshalJSON_JaegerResult(t *testing.T) {
	td := ptrace.NewTraces()
	s := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID{1, 2, 3})
	s.SetSpanID(pcommon.SpanID{4, 5})
	s.SetName("chat gpt-4o")
	var m ptrace.JSONMarshaler
	doc, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		string(doc),
		`{"result":` + string(doc) + `}`,
		" {\n  \"result\" :  " + string(doc) + " \n}\n",
		`{"result":` + string(doc) + `,"other":{"a":1}}`,
	} {
		got, err := UnmarshalJSON([]byte(body))
		if err != nil {
			t.Fatalf("%.60s: %v", body, err)
		}
		if got.SpanCount() != 1 || got.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Name() != "chat gpt-4o" {
			t.Errorf("%.60s: %d spans", body, got.SpanCount())
		}
	}
	if inner, ok := jaegerResult([]byte(`{"result":` + string(doc) + `}`)); !ok || string(inner) != string(doc) {
		t.Errorf("jaegerResult = %.60s, %v", inner, ok)
	}
	for _, not := range []string{`{}`, `{"resourceSpans":[]}`, `{"result":[1]}`, `[{"result":{}}]`} {
		if _, ok := jaegerResult([]byte(not)); ok {
			t.Errorf("jaegerResult(%s) took it as Jaeger's answer", not)
		}
	}
}
