package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// docTraces is two resources of two scopes each, n spans a scope, with
// attributes, events and statuses; pad makes each span's attribute that
// many bytes longer.
func docTraces(n, pad int) ptrace.Traces {
	td := ptrace.NewTraces()
	id := 0
	for r := 0; r < 2; r++ {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", r))
		for s := 0; s < 2; s++ {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName(fmt.Sprintf("scope-%d", s))
			ss.Scope().SetVersion("1.0")
			for k := 0; k < n; k++ {
				id++
				sp := ss.Spans().AppendEmpty()
				sp.SetTraceID(pcommon.TraceID{byte(r), byte(s), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
				sp.SetSpanID(pcommon.SpanID{0, 0, 0, 0, byte(id >> 16), byte(id >> 8), byte(id), 1})
				if k > 0 {
					sp.SetParentSpanID(pcommon.SpanID{0, 0, 0, 0, byte((id - 1) >> 16), byte((id - 1) >> 8), byte(id - 1), 1})
				}
				sp.SetName(fmt.Sprintf("chat m%d", k))
				sp.SetStartTimestamp(pcommon.Timestamp(1767225600e9 + int64(id)*1e6))
				sp.SetEndTimestamp(pcommon.Timestamp(1767225600e9 + int64(id)*1e6 + 5e5))
				sp.Attributes().PutStr("gen_ai.operation.name", "chat")
				sp.Attributes().PutInt("gen_ai.usage.input_tokens", int64(k))
				sp.Attributes().PutStr("gen_ai.prompt", "hello "+strings.Repeat("x", pad))
				if k%3 == 0 {
					sp.Status().SetCode(ptrace.StatusCodeError)
					sp.Status().SetMessage("boom")
					ev := sp.Events().AppendEmpty()
					ev.SetName("exception")
					ev.Attributes().PutStr("exception.message", "boom")
				}
			}
		}
	}
	return td
}

func spansOf(t *testing.T, r io.Reader) []*Span {
	t.Helper()
	var got []*Span
	if _, err := Read(context.Background(), r, Limits{}, func(s *Span) error { got = append(got, s); return nil }); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestRead_DocumentStreamed: one document reads the same spans, in the
// same order, whether it is one line pdata parses whole, pretty-printed
// over many lines, one line longer than the first line Read holds, or
// written with its spans before their scope and its scopeSpans before
// their resource (held and parsed whole); documents one after another
// (jq's output of a lines file) are all read.
func TestRead_DocumentStreamed(t *testing.T) {
	var m ptrace.JSONMarshaler
	td := docTraces(700, 0) // 2,800 spans: many batches a scope
	doc, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	var want []*Span
	Flatten(td, Limits{}, func(s *Span) { want = append(want, s) })
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	bigTD := docTraces(40, 200<<10) // 160 spans of 200 KB: 32 MB on one line
	big, err := m.MarshalTraces(bigTD)
	if err != nil {
		t.Fatal(err)
	}
	var bigWant []*Span
	Flatten(bigTD, Limits{}, func(s *Span) { bigWant = append(bigWant, s) })
	if len(big) <= firstLineCap {
		t.Fatalf("the long line is %d bytes, not over %d", len(big), firstLineCap)
	}
	// the same document with each object's members in reverse order
	var v any
	if err := json.Unmarshal(doc, &v); err != nil {
		t.Fatal(err)
	}
	var reversed bytes.Buffer
	writeReversed(&reversed, v)

	for _, tt := range []struct {
		name string
		in   []byte
		want []*Span
	}{
		{"one line", doc, want},
		{"pretty-printed", pretty.Bytes(), want},
		{"one long line", big, bigWant},
		{"one long line, then lines", append(append(append(big, '\n'), doc...), '\n'), append(append([]*Span{}, bigWant...), want...)},
		{"members in reverse order", append([]byte("{\n"), reversed.Bytes()[1:]...), want},
		{"two pretty documents", append(append(pretty.Bytes(), '\n'), pretty.Bytes()...), append(append([]*Span{}, want...), want...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := spansOf(t, bytes.NewReader(tt.in))
			if len(got) != len(tt.want) {
				t.Fatalf("%d spans, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tt.want[i]) {
					t.Fatalf("span %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// writeReversed writes v as JSON, each object's members last first.
func writeReversed(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// a fixed order: descending, so "spans" before "scope" and
		// "scopeSpans" before "resource"
		for i := 0; i < len(keys); i++ {
			for j := i + 1; j < len(keys); j++ {
				if keys[j] > keys[i] {
					keys[i], keys[j] = keys[j], keys[i]
				}
			}
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteByte(':')
			writeReversed(b, x[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeReversed(b, e)
		}
		b.WriteByte(']')
	default:
		e, _ := json.Marshal(x)
		b.Write(e)
	}
}

// cutReader gives its bytes up to cut, then fails.
type cutReader struct {
	r   io.Reader
	cut int
}

var errCut = errors.New("the reader broke")

func (c *cutReader) Read(p []byte) (int, error) {
	if c.cut <= 0 {
		return 0, errCut
	}
	if len(p) > c.cut {
		p = p[:c.cut]
	}
	n, err := c.r.Read(p)
	c.cut -= n
	return n, err
}

// TestRead_DocumentSpansBeforeItsEnd: spans of a pretty-printed document
// are handed on as the document is read, not once it has all been read:
// a reader that breaks halfway has given the spans before the break (read
// whole, it gave none), and the break is the error.
func TestRead_DocumentSpansBeforeItsEnd(t *testing.T) {
	var m ptrace.JSONMarshaler
	doc, err := m.MarshalTraces(docTraces(700, 0))
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	n := 0
	_, err = Read(context.Background(), &cutReader{bytes.NewReader(pretty.Bytes()), pretty.Len() / 2}, Limits{}, func(*Span) error { n++; return nil })
	if !errors.Is(err, errCut) {
		t.Errorf("err = %v, want the reader's", err)
	}
	if n < 1000 {
		t.Errorf("%d spans before the break, want the first half's (about 1,400)", n)
	}
}

// TestRead_DocumentProblems: what is wrong in a streamed document is said
// at its place in the whole document, as for one parsed whole.
func TestRead_DocumentProblems(t *testing.T) {
	var m ptrace.JSONMarshaler
	doc, err := m.MarshalTraces(docTraces(700, 0))
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, doc, "", "  "); err != nil {
		t.Fatal(err)
	}
	// the 601st span of resourceSpans[1].scopeSpans[1]: 2,101st of all
	bad := strings.Replace(pretty.String(), `"spanId": "00000000000a8d01"`, `"spanId": "zz"`, 1)
	if bad == pretty.String() {
		t.Fatal("no span 2,701 to break")
	}
	for _, tt := range []struct{ name, in, want string }{
		{"bad span id", bad, `resourceSpans[1].scopeSpans[1].spans[600].spanId is "zz", not 16 hex digits`},
		{"not valid JSON", strings.Replace(pretty.String(), `"name": "chat m500"`, `"name": chat m500"`, 1), "it is not valid JSON (invalid character 'c' looking for beginning of value, at byte"},
		{"cut short", pretty.String()[:pretty.Len()/2], "it is not valid JSON: it ends before its JSON value does"},
		{"not an array", "{\n\"resourceSpans\": {\"a\": 1}}", "resourceSpans is a JSON object, not an array"},
		{"no resourceSpans", "{\n\"hello\": [1, 2]}", "the JSON object has no resourceSpans member"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(context.Background(), strings.NewReader(tt.in), Limits{}, func(*Span) error { return nil })
			if !errors.Is(err, ErrNotOTLP) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrNotOTLP saying %q", err, tt.want)
			}
		})
	}
}

// reversedProto is the request b with the fields of each ResourceSpans
// and ScopeSpans in reverse order (scope_spans before the resource, spans
// before their scope): valid protobuf, parsed to the same traces.
func reversedProto(t *testing.T, b []byte, level int) []byte {
	t.Helper()
	var fields [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatal(protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			t.Fatal(protowire.ParseError(m))
		}
		f := b[:n+m]
		if typ == protowire.BytesType && (level == 0 && num == 1 || level == 1 && num == 2) {
			v, _ := protowire.ConsumeBytes(b[n:])
			f = protowire.AppendBytes(protowire.AppendTag(nil, num, typ), reversedProto(t, v, level+1))
		}
		fields = append(fields, f)
		b = b[n+m:]
	}
	var out []byte
	for i := range fields {
		if level == 0 {
			out = append(out, fields[i]...)
		} else {
			out = append(out, fields[len(fields)-1-i]...)
		}
	}
	return out
}

// TestRead_ProtoStreamed: one OTLP/protobuf request reads the same spans
// a field at a time as pdata's parse of it whole, with its fields in
// reverse order too; its spans are handed on before it has all been read;
// a broken encoding says the byte.
func TestRead_ProtoStreamed(t *testing.T) {
	var m ptrace.ProtoMarshaler
	td := docTraces(700, 0)
	req, err := m.MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		in   []byte
	}{{"in field order", req}, {"fields in reverse order", reversedProto(t, req, 0)}} {
		t.Run(tt.name, func(t *testing.T) {
			whole, err := UnmarshalProto(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			var want []*Span
			Flatten(whole, Limits{}, func(s *Span) { want = append(want, s) })
			got := spansOf(t, bytes.NewReader(tt.in))
			if len(got) != len(want) {
				t.Fatalf("%d spans, want %d", len(got), len(want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("span %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
		})
	}
	// spans handed on before the request has been read: at the first,
	// a fifth of it at most (whole, it had been read to its end)
	big, err := m.MarshalTraces(docTraces(700, 4000))
	if err != nil {
		t.Fatal(err)
	}
	r := &countingReaderAt{Reader: bytes.NewReader(big)}
	first := int64(-1)
	if _, err := Read(context.Background(), r, Limits{}, func(*Span) error {
		if first < 0 {
			first = r.n
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if first > int64(len(big))/5 {
		t.Errorf("%d bytes of %d read before the first span, want a fifth at most", first, len(big))
	}
	_, err = Read(context.Background(), bytes.NewReader(req[:len(req)-3]), Limits{}, func(*Span) error { return nil })
	if want := "(the input ends inside a field)"; !errors.Is(err, ErrNotOTLP) || !strings.Contains(err.Error(), "its protobuf encoding breaks at byte") || !strings.Contains(err.Error(), want) {
		t.Errorf("cut short: err = %v, want ErrNotOTLP saying %q", err, want)
	}
}

// countingReaderAt counts the bytes read from it.
type countingReaderAt struct {
	*bytes.Reader
	n int64
}

func (c *countingReaderAt) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.Reader.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// TestFlatten_Keys: with Limits.Keys a span holds only those attributes
// and no events, and the values cut are counted as when it holds all.
func TestFlatten_Keys(t *testing.T) {
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1})
	sp.SetSpanID(pcommon.SpanID{2})
	sp.Attributes().PutStr("session.id", "s1")
	sp.Attributes().PutStr("gen_ai.prompt", strings.Repeat("x", DefaultMaxValue+1))
	sp.Attributes().PutEmptySlice("list").AppendEmpty().SetStr(strings.Repeat("y", DefaultMaxValue+1))
	ev := sp.Events().AppendEmpty()
	ev.SetName("log")
	ev.Attributes().PutEmptyBytes("raw").FromRaw(make([]byte, DefaultMaxValue+1))
	var all, some *Span
	nAll := Flatten(td, Limits{}, func(s *Span) { all = s })
	nSome := Flatten(td, Limits{Keys: []string{"session.id", "absent"}}, func(s *Span) { some = s })
	if nAll != 3 || nSome != nAll {
		t.Errorf("cut %d values with Keys, %d without; want 3 both", nSome, nAll)
	}
	if !reflect.DeepEqual(some.Attrs, Attrs{"session.id": "s1"}) || some.Events != nil {
		t.Errorf("with Keys: attrs %v, events %v; want session.id alone, no events", some.Attrs, some.Events)
	}
	if len(all.Attrs) != 3 || len(all.Events) != 1 {
		t.Errorf("without Keys: %d attrs, %d events", len(all.Attrs), len(all.Events))
	}
}
