package otel

import (
	"context"
	"io"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// FileExporter is an SDK span exporter that writes each batch as one line
// of OTLP/JSON (an ExportTraceServiceRequest, ids in hex), as the
// Collector's file exporter does: the file inspect import reads back.
type FileExporter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewFileExporter writes to w.
func NewFileExporter(w io.Writer) *FileExporter { return &FileExporter{w: w} }

// ExportSpans implements sdktrace.SpanExporter.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	var m ptrace.JSONMarshaler
	b, err := m.MarshalTraces(Traces(spans))
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err = e.w.Write(append(b, '\n'))
	return err
}

// Shutdown implements sdktrace.SpanExporter.
func (e *FileExporter) Shutdown(context.Context) error { return nil }

// Traces converts SDK spans to pdata, one resource and scope group per
// distinct resource and scope, in the spans' order.
func Traces(spans []sdktrace.ReadOnlySpan) ptrace.Traces {
	td := ptrace.NewTraces()
	type key struct {
		res   string
		scope string
	}
	groups := map[key]ptrace.SpanSlice{}
	for _, s := range spans {
		k := key{s.Resource().Encoded(attribute.DefaultEncoder()), s.InstrumentationScope().Name + "\x00" + s.InstrumentationScope().Version}
		ss, ok := groups[k]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			putAttrs(rs.Resource().Attributes(), s.Resource().Attributes())
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(s.InstrumentationScope().Name)
			sc.Scope().SetVersion(s.InstrumentationScope().Version)
			ss = sc.Spans()
			groups[k] = ss
		}
		p := ss.AppendEmpty()
		sc := s.SpanContext()
		p.SetTraceID(pcommon.TraceID(sc.TraceID()))
		p.SetSpanID(pcommon.SpanID(sc.SpanID()))
		if s.Parent().IsValid() {
			p.SetParentSpanID(pcommon.SpanID(s.Parent().SpanID()))
		}
		p.SetName(s.Name())
		p.SetKind(spanKind(s.SpanKind()))
		p.SetStartTimestamp(pcommon.NewTimestampFromTime(s.StartTime()))
		p.SetEndTimestamp(pcommon.NewTimestampFromTime(s.EndTime()))
		putAttrs(p.Attributes(), s.Attributes())
		switch s.Status().Code {
		case codes.Ok:
			p.Status().SetCode(ptrace.StatusCodeOk)
		case codes.Error:
			p.Status().SetCode(ptrace.StatusCodeError)
			p.Status().SetMessage(s.Status().Description)
		}
		for _, ev := range s.Events() {
			pe := p.Events().AppendEmpty()
			pe.SetName(ev.Name)
			pe.SetTimestamp(pcommon.NewTimestampFromTime(ev.Time))
			putAttrs(pe.Attributes(), ev.Attributes)
		}
	}
	return td
}

func spanKind(k trace.SpanKind) ptrace.SpanKind {
	switch k {
	case trace.SpanKindServer:
		return ptrace.SpanKindServer
	case trace.SpanKindClient:
		return ptrace.SpanKindClient
	case trace.SpanKindProducer:
		return ptrace.SpanKindProducer
	case trace.SpanKindConsumer:
		return ptrace.SpanKindConsumer
	}
	return ptrace.SpanKindInternal
}

func putAttrs(m pcommon.Map, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		k := string(kv.Key)
		switch kv.Value.Type() {
		case attribute.BOOL:
			m.PutBool(k, kv.Value.AsBool())
		case attribute.INT64:
			m.PutInt(k, kv.Value.AsInt64())
		case attribute.FLOAT64:
			m.PutDouble(k, kv.Value.AsFloat64())
		case attribute.STRINGSLICE:
			sl := m.PutEmptySlice(k)
			for _, v := range kv.Value.AsStringSlice() {
				sl.AppendEmpty().SetStr(v)
			}
		default:
			m.PutStr(k, kv.Value.Emit())
		}
	}
}
