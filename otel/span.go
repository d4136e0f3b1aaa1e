// Package otel speaks OpenTelemetry for inspect (DESIGN §14). In: OTLP/JSON
// (one ExportTraceServiceRequest a line, as the Collector's file exporter
// writes, or one document, Jaeger's /api/v3 answer included) and
// OTLP/protobuf, parsed with the Collector's pdata into Spans, a flat form
// an importer can hold many of; a file is read as it comes, a line, or a
// batch of one document's spans, at a time (doc.go, proto.go). Live: Handler is the OTLP/HTTP receiver
// (POST /v1/traces). Out: Export and Stream turn a recorded run into GenAI
// spans through the OTel Go SDK. It knows no rules, no rendering and no SQL;
// what spans mean as a run is importers/otlp's job.
package otel

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Span is one OTLP span, flattened: its resource's service and its scope
// travel with it, ids are hex, attribute values are Go values.
type Span struct {
	TraceID  string // 32 hex digits
	SpanID   string // 16 hex digits
	ParentID string // "" for a root span
	Name     string
	Kind     string // "Internal", "Server", "Client", ... as pdata spells them
	Start    time.Time
	End      time.Time // zero: the span never ended (its exporter died, or it is still open)
	// Status is "" (unset), "ok" or "error"; StatusMessage says why.
	Status        string
	StatusMessage string
	Attrs         Attrs
	Events        []Event
	Service       string // the resource's service.name
	Scope         string // the instrumentation scope's name
	ScopeVersion  string
}

// Event is one span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs Attrs
}

// Attrs are attribute values by key: string, int64, float64, bool, []byte,
// []any or map[string]any.
type Attrs map[string]any

// Str is the attribute at key as text: a string as it is, a number or bool
// in its usual form, an array or map as JSON-ish text; "" when absent.
func (a Attrs) Str(key string) string {
	switch v := a[key].(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	default:
		return fmt.Sprint(v)
	}
}

// Int is the attribute at key as an integer and whether it is one (an int,
// a whole float, or a string of digits, as some exporters send counts).
func (a Attrs) Int(key string) (int64, bool) {
	switch v := a[key].(type) {
	case int64:
		return v, true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// Has reports whether key is set.
func (a Attrs) Has(key string) bool { _, ok := a[key]; return ok }

// Strings is the attribute at key as a list of strings (an array of
// strings, or one string).
func (a Attrs) Strings(key string) []string {
	switch v := a[key].(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Limits bound what one span may hold.
type Limits struct {
	// MaxValue caps a string or bytes attribute value; a longer one keeps
	// its first MaxValue bytes and is counted in Truncated. 0 = 4 MiB.
	MaxValue int
	// Keys, when set, are the only attributes a span's Attrs hold, and
	// its Events are left out (the values cut are counted all the same):
	// for a pass over a file that needs ids and a few attributes, not
	// what the spans say.
	Keys []string
}

// DefaultMaxValue is the cap of one attribute value.
const DefaultMaxValue = 4 << 20

// Flatten calls fn with each span of td, in document order. It returns how
// many attribute values were cut to lim.MaxValue.
func Flatten(td ptrace.Traces, lim Limits, fn func(*Span)) (truncated int) {
	max := lim.MaxValue
	if max <= 0 {
		max = DefaultMaxValue
	}
	conv := converter{max: max, keys: lim.Keys}
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok {
			service = v.AsString()
		}
		sss := rs.ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			ss := sss.At(j)
			scope, version := ss.Scope().Name(), ss.Scope().Version()
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				fn(conv.span(spans.At(k), service, scope, version))
			}
		}
	}
	return conv.truncated
}

type converter struct {
	max       int
	keys      []string
	truncated int
}

func (c *converter) span(s ptrace.Span, service, scope, version string) *Span {
	out := &Span{
		TraceID:      traceHex(s.TraceID()),
		SpanID:       spanHex(s.SpanID()),
		Name:         s.Name(),
		Kind:         s.Kind().String(),
		Start:        timeOf(s.StartTimestamp()),
		End:          timeOf(s.EndTimestamp()),
		Attrs:        c.attrs(s.Attributes()),
		Service:      service,
		Scope:        scope,
		ScopeVersion: version,
	}
	if p := s.ParentSpanID(); !p.IsEmpty() {
		out.ParentID = spanHex(p)
	}
	switch s.Status().Code() {
	case ptrace.StatusCodeOk:
		out.Status = "ok"
	case ptrace.StatusCodeError:
		out.Status = "error"
	}
	out.StatusMessage = s.Status().Message()
	if evs := s.Events(); c.keys != nil {
		for i := 0; i < evs.Len(); i++ {
			evs.At(i).Attributes().Range(func(_ string, v pcommon.Value) bool { c.count(v); return true })
		}
	} else if evs.Len() > 0 {
		out.Events = make([]Event, evs.Len())
		for i := 0; i < evs.Len(); i++ {
			e := evs.At(i)
			out.Events[i] = Event{Name: e.Name(), Time: timeOf(e.Timestamp()), Attrs: c.attrs(e.Attributes())}
		}
	}
	return out
}

func (c *converter) attrs(m pcommon.Map) Attrs {
	if m.Len() == 0 {
		return nil
	}
	if c.keys != nil {
		var out Attrs
		m.Range(func(k string, v pcommon.Value) bool {
			for _, key := range c.keys {
				if k == key {
					if out == nil {
						out = Attrs{}
					}
					out[k] = c.value(v)
					return true
				}
			}
			c.count(v)
			return true
		})
		return out
	}
	out := make(Attrs, m.Len())
	m.Range(func(k string, v pcommon.Value) bool {
		out[k] = c.value(v)
		return true
	})
	return out
}

func (c *converter) value(v pcommon.Value) any {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		s := v.Str()
		if len(s) > c.max {
			c.truncated++
			s = strings.Clone(s[:c.max]) // the cut value alone is held, not the whole
		}
		return s
	case pcommon.ValueTypeInt:
		return v.Int()
	case pcommon.ValueTypeDouble:
		return v.Double()
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeBytes:
		b := v.Bytes().AsRaw()
		if len(b) > c.max {
			c.truncated++
			b = bytes.Clone(b[:c.max])
		}
		return b
	case pcommon.ValueTypeSlice:
		sl := v.Slice()
		out := make([]any, sl.Len())
		for i := range out {
			out[i] = c.value(sl.At(i))
		}
		return out
	case pcommon.ValueTypeMap:
		mp := v.Map()
		out := make(map[string]any, mp.Len())
		mp.Range(func(k string, x pcommon.Value) bool {
			out[k] = c.value(x)
			return true
		})
		return out
	}
	return nil
}

// count counts the values in v that value would cut, converting none.
func (c *converter) count(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		if len(v.Str()) > c.max {
			c.truncated++
		}
	case pcommon.ValueTypeBytes:
		if v.Bytes().Len() > c.max {
			c.truncated++
		}
	case pcommon.ValueTypeSlice:
		sl := v.Slice()
		for i := 0; i < sl.Len(); i++ {
			c.count(sl.At(i))
		}
	case pcommon.ValueTypeMap:
		v.Map().Range(func(_ string, x pcommon.Value) bool { c.count(x); return true })
	}
}

func timeOf(ts pcommon.Timestamp) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return ts.AsTime().UTC()
}

func traceHex(id pcommon.TraceID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func spanHex(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}
