package otel

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// notOTLP is ErrNotOTLP with what was wrong, said in the terms of the
// OTLP format (a field path, the value it holds, what it should hold),
// not in the terms of the parser that found it.
type notOTLP struct {
	format string // "OTLP/JSON" or "OTLP/protobuf"
	why    string
}

func (e *notOTLP) Error() string { return ErrNotOTLP.Error() + ": " + e.why }
func (e *notOTLP) Unwrap() error { return ErrNotOTLP }

// BodyProblem says, for an error of UnmarshalJSON or UnmarshalProto, what
// was wrong with the body in user terms ("the body is not OTLP/JSON trace
// data: resourceSpans[0].scopeSpans[0].spans[0].traceId is "zz", not 32
// hex digits"), and false for any other error.
func BodyProblem(err error) (string, bool) {
	var n *notOTLP
	if !errors.As(err, &n) {
		return "", false
	}
	return "the body is not " + n.format + " trace data: " + n.why, true
}

func jsonWhy(err error) string {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return "it ends before its JSON value does"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonProblem says what keeps data from being OTLP/JSON trace data, for a
// body the OTLP parser refused: invalid JSON (with the byte offset), or the
// first field, along the OTLP paths, whose value has the wrong type or
// form. parserErr is used, without its internals, when neither is found.
func jsonProblem(data []byte, parserErr error) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Sprintf("it is not valid JSON (%s, at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
		}
		return fmt.Sprintf("it is not valid JSON: %s", jsonWhy(err))
	}
	if d.More() {
		return "it holds more than one JSON value; send one export request a body"
	}
	top, ok := v.(map[string]any)
	if !ok {
		return fmt.Sprintf("it is a JSON %s, not an object {\"resourceSpans\": [...]}", jsonKind(v))
	}
	if w, ok := top["result"].(map[string]any); ok && top["resourceSpans"] == nil {
		top = w // Jaeger's {"result": ...}
	}
	if why := checkTraces(top); why != "" {
		return why
	}
	if parserErr != nil {
		// The parser saw something the walk above does not check; say
		// where, without its internals.
		if m := strings.Index(parserErr.Error(), "error found in #"); m >= 0 {
			rest := parserErr.Error()[m+len("error found in #"):]
			if n, err := strconv.Atoi(strings.Fields(rest)[0]); err == nil {
				return fmt.Sprintf("a value near byte %d does not have the type the OTLP/JSON encoding gives that field", n)
			}
		}
	}
	return "a value does not have the type the OTLP/JSON encoding gives its field"
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	}
	return "object"
}

// field returns o's member named by any of its OTLP/JSON spellings
// (lowerCamelCase, as the specification writes, or the proto name).
func field(o map[string]any, names ...string) (any, string, bool) {
	for _, n := range names {
		if v, ok := o[n]; ok {
			return v, n, true
		}
	}
	return nil, names[0], false
}

func wrongType(path string, v any, want string) string {
	return fmt.Sprintf("%s is a JSON %s, not %s", path, jsonKind(v), want)
}

// list checks that o's member (if present and not null) is an array of
// objects and returns them with their paths.
func list(o map[string]any, path string, names ...string) ([]map[string]any, []string, string) {
	v, name, ok := field(o, names...)
	if !ok || v == nil {
		return nil, nil, ""
	}
	p := join(path, name)
	a, ok := v.([]any)
	if !ok {
		return nil, nil, wrongType(p, v, "an array")
	}
	objs := make([]map[string]any, 0, len(a))
	paths := make([]string, 0, len(a))
	for i, e := range a {
		ep := fmt.Sprintf("%s[%d]", p, i)
		m, ok := e.(map[string]any)
		if !ok {
			return nil, nil, wrongType(ep, e, "an object")
		}
		objs = append(objs, m)
		paths = append(paths, ep)
	}
	return objs, paths, ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func checkTraces(top map[string]any) string {
	if _, _, ok := field(top, "resourceSpans", "resource_spans"); !ok {
		if len(top) == 0 {
			return ""
		}
		return "the JSON object has no resourceSpans member (an export request is {\"resourceSpans\": [...]})"
	}
	rs, rp, why := list(top, "", "resourceSpans", "resource_spans")
	if why != "" {
		return why
	}
	for i, r := range rs {
		if res, _, ok := field(r, "resource"); ok && res != nil {
			m, ok := res.(map[string]any)
			if !ok {
				return wrongType(rp[i]+".resource", res, "an object")
			}
			if why := checkAttributes(m, rp[i]+".resource"); why != "" {
				return why
			}
		}
		ss, sp, why := list(r, rp[i], "scopeSpans", "scope_spans", "instrumentationLibrarySpans")
		if why != "" {
			return why
		}
		for j, s := range ss {
			spans, pp, why := list(s, sp[j], "spans")
			if why != "" {
				return why
			}
			for k, span := range spans {
				if why := checkSpan(span, pp[k]); why != "" {
					return why
				}
			}
		}
	}
	return ""
}

func checkSpan(s map[string]any, path string) string {
	for _, id := range []struct {
		names []string
		bytes int
	}{
		{[]string{"traceId", "trace_id"}, 16},
		{[]string{"spanId", "span_id"}, 8},
		{[]string{"parentSpanId", "parent_span_id"}, 8},
	} {
		v, name, ok := field(s, id.names...)
		if !ok || v == nil {
			continue
		}
		p := join(path, name)
		str, ok := v.(string)
		if !ok {
			return wrongType(p, v, fmt.Sprintf("a string of %d hex digits", 2*id.bytes))
		}
		if str == "" {
			continue
		}
		if b, err := hex.DecodeString(str); err != nil || len(b) != id.bytes {
			return fmt.Sprintf("%s is %s, not %d hex digits", p, quote(str), 2*id.bytes)
		}
	}
	if v, _, ok := field(s, "name"); ok && v != nil {
		if _, ok := v.(string); !ok {
			return wrongType(join(path, "name"), v, "a string")
		}
	}
	for _, names := range [][]string{{"startTimeUnixNano", "start_time_unix_nano"}, {"endTimeUnixNano", "end_time_unix_nano"}} {
		v, name, ok := field(s, names...)
		if !ok || v == nil {
			continue
		}
		if why := checkUint(v, join(path, name), "nanoseconds since 1970"); why != "" {
			return why
		}
	}
	if v, name, ok := field(s, "kind"); ok && v != nil {
		if _, isNum := v.(json.Number); !isNum {
			if str, isStr := v.(string); !isStr || !strings.HasPrefix(str, "SPAN_KIND_") {
				return fmt.Sprintf("%s is %s, not a span kind (a number 0-5 or SPAN_KIND_…)", join(path, name), show(v))
			}
		}
	}
	if why := checkAttributes(s, path); why != "" {
		return why
	}
	if v, name, ok := field(s, "status"); ok && v != nil {
		if _, ok := v.(map[string]any); !ok {
			return wrongType(join(path, name), v, "an object {\"code\": …, \"message\": …}")
		}
	}
	ev, ep, why := list(s, path, "events")
	if why != "" {
		return why
	}
	for i, e := range ev {
		if why := checkAttributes(e, ep[i]); why != "" {
			return why
		}
	}
	return ""
}

func checkUint(v any, path, what string) string {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	default:
		return wrongType(path, v, "a number ("+what+")")
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		return fmt.Sprintf("%s is %s, not a whole number (%s)", path, show(v), what)
	}
	return ""
}

func checkAttributes(o map[string]any, path string) string {
	attrs, ap, why := list(o, path, "attributes")
	if why != "" {
		return why
	}
	for i, a := range attrs {
		k, ok := a["key"]
		if _, isStr := k.(string); !ok || !isStr {
			return fmt.Sprintf("%s has no string key (an attribute is {\"key\": \"…\", \"value\": {\"stringValue\": \"…\"}})", ap[i])
		}
		if v, ok := a["value"]; ok && v != nil {
			if _, ok := v.(map[string]any); !ok {
				return wrongType(ap[i]+".value", v, "an object such as {\"stringValue\": \"…\"}")
			}
		}
	}
	return ""
}

// show quotes a JSON value for a message, cut to 40 bytes.
func show(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	b, _ := json.Marshal(v)
	if len(b) > 40 {
		b = append(b[:40:40], "…"...)
	}
	return string(b)
}

func quote(s string) string {
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return strconv.Quote(s)
}

// protoProblem says what keeps data from being an OTLP/protobuf trace
// export, for a body the OTLP parser refused: JSON sent as protobuf, or
// the byte at which the protobuf encoding breaks.
func protoProblem(data []byte) string {
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid(t) {
		return "it is JSON; send it with Content-Type: application/json"
	}
	for off := 0; off < len(data); {
		_, _, n := protowire.ConsumeField(data[off:])
		if n < 0 {
			return fmt.Sprintf("its protobuf encoding breaks at byte %d of %d (%s)", off, len(data), wireWhy(n))
		}
		off += n
	}
	return "its fields do not have the types of an ExportTraceServiceRequest"
}

// wireWhy names a protowire error code (protowire.ParseError's negative
// lengths: -1 truncated, -2 bad field number, -3 overflow, -4 reserved
// wire type, -5 end group), not its message text.
func wireWhy(n int) string {
	switch n {
	case -1:
		return "the body ends inside a field"
	case -3:
		return "a number longer than 64 bits"
	case -2, -4, -5:
		return "bytes that are not a protobuf field"
	}
	return "bytes that are not a protobuf field"
}
