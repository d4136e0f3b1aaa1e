package otel

import (
	"encoding/hex"
	"fmt"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// This file is what a receiver needs to keep spans bounded and for later:
// the bytes a span holds (Size), and spans as OTLP/protobuf again
// (EncodeSpans, DecodeSpans) for a store to keep.

// spanOverhead is what a Span costs besides its texts and attributes: the
// struct, its times, the attribute map's header.
const spanOverhead = 256

// Size is about how many bytes s holds in memory: its texts, its
// attributes' keys and values (nested ones included) and its events, each
// with the overhead of its kind. A receiver caps what it holds by it.
func (s *Span) Size() int64 {
	n := int64(spanOverhead + len(s.TraceID) + len(s.SpanID) + len(s.ParentID) + len(s.Name) + len(s.Kind) +
		len(s.Status) + len(s.StatusMessage) + len(s.Service) + len(s.Scope) + len(s.ScopeVersion))
	n += attrsSize(s.Attrs)
	for _, e := range s.Events {
		n += 64 + int64(len(e.Name)) + attrsSize(e.Attrs)
	}
	return n
}

func attrsSize(a Attrs) int64 {
	var n int64
	for k, v := range a {
		n += 48 + int64(len(k)) + valueSize(v)
	}
	return n
}

func valueSize(v any) int64 {
	switch x := v.(type) {
	case string:
		return 16 + int64(len(x))
	case []byte:
		return 24 + int64(len(x))
	case []any:
		n := int64(24)
		for _, e := range x {
			n += 16 + valueSize(e)
		}
		return n
	case map[string]any:
		n := int64(48)
		for k, e := range x {
			n += 48 + int64(len(k)) + valueSize(e)
		}
		return n
	}
	return 16
}

// EncodeSpans writes spans as one OTLP/protobuf ExportTraceServiceRequest
// (spans of one service and scope in a row share their resource and
// scope), which DecodeSpans reads back as the same spans.
func EncodeSpans(spans []*Span) ([]byte, error) {
	td := ptrace.NewTraces()
	var ss ptrace.SpanSlice
	var last *Span
	for _, s := range spans {
		if last == nil || s.Service != last.Service || s.Scope != last.Scope || s.ScopeVersion != last.ScopeVersion {
			rs := td.ResourceSpans().AppendEmpty()
			if s.Service != "" {
				rs.Resource().Attributes().PutStr("service.name", s.Service)
			}
			sc := rs.ScopeSpans().AppendEmpty()
			sc.Scope().SetName(s.Scope)
			sc.Scope().SetVersion(s.ScopeVersion)
			ss = sc.Spans()
		}
		last = s
		if err := putSpan(ss.AppendEmpty(), s); err != nil {
			return nil, fmt.Errorf("span %s of trace %s: %w", s.SpanID, s.TraceID, err)
		}
	}
	return ptraceotlp.NewExportRequestFromTraces(td).MarshalProto()
}

// DecodeSpans reads what EncodeSpans wrote.
func DecodeSpans(data []byte) ([]*Span, error) {
	td, err := UnmarshalProto(data)
	if err != nil {
		return nil, err
	}
	var out []*Span
	Flatten(td, Limits{MaxValue: math.MaxInt}, func(s *Span) { out = append(out, s) })
	return out, nil
}

func putSpan(p ptrace.Span, s *Span) error {
	var tid pcommon.TraceID
	if err := putHex(tid[:], s.TraceID); err != nil {
		return err
	}
	p.SetTraceID(tid)
	var sid pcommon.SpanID
	if err := putHex(sid[:], s.SpanID); err != nil {
		return err
	}
	p.SetSpanID(sid)
	if s.ParentID != "" {
		var pid pcommon.SpanID
		if err := putHex(pid[:], s.ParentID); err != nil {
			return err
		}
		p.SetParentSpanID(pid)
	}
	p.SetName(s.Name)
	p.SetKind(kindOf(s.Kind))
	if !s.Start.IsZero() {
		p.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
	}
	if !s.End.IsZero() {
		p.SetEndTimestamp(pcommon.NewTimestampFromTime(s.End))
	}
	switch s.Status {
	case "ok":
		p.Status().SetCode(ptrace.StatusCodeOk)
	case "error":
		p.Status().SetCode(ptrace.StatusCodeError)
	}
	p.Status().SetMessage(s.StatusMessage)
	if err := p.Attributes().FromRaw(s.Attrs); err != nil {
		return err
	}
	for _, e := range s.Events {
		pe := p.Events().AppendEmpty()
		pe.SetName(e.Name)
		if !e.Time.IsZero() {
			pe.SetTimestamp(pcommon.NewTimestampFromTime(e.Time))
		}
		if err := pe.Attributes().FromRaw(e.Attrs); err != nil {
			return err
		}
	}
	return nil
}

func putHex(dst []byte, s string) error {
	if s == "" {
		return nil
	}
	if hex.DecodedLen(len(s)) != len(dst) {
		return fmt.Errorf("id %q is not %d hex digits", s, 2*len(dst))
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}

// kindOf is the span kind pdata spells k ("Internal", "Server", …).
func kindOf(k string) ptrace.SpanKind {
	for _, c := range []ptrace.SpanKind{ptrace.SpanKindInternal, ptrace.SpanKindServer, ptrace.SpanKindClient,
		ptrace.SpanKindProducer, ptrace.SpanKindConsumer} {
		if c.String() == k {
			return c
		}
	}
	return ptrace.SpanKindUnspecified
}
