package importerstest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// supervisor is the OpenInference LangGraph supervisor fixture BigOTLP
// repeats: one resource, one scope, 60 spans of one trace.
const supervisor = "otlp/testdata/langgraph-supervisor.otlp.jsonl"

// supervisorParts is the fixture's resource, scope and spans (one a line,
// each in its own request), as JSON.
func supervisorParts() (resource, scope json.RawMessage, spans []json.RawMessage, err error) {
	f, err := os.Open(fixture(supervisor))
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var req struct {
			ResourceSpans []struct {
				Resource   json.RawMessage `json:"resource"`
				ScopeSpans []struct {
					Scope json.RawMessage   `json:"scope"`
					Spans []json.RawMessage `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return nil, nil, nil, err
		}
		for _, rs := range req.ResourceSpans {
			resource = rs.Resource
			for _, ss := range rs.ScopeSpans {
				scope = ss.Scope
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return resource, scope, spans, sc.Err()
}

// copyIDs returns the copies maker of the fixture's spans: copy k of
// them with their ids' first eight hex digits k's, a trace of its own.
func copyIDs(spans []json.RawMessage) func(k int) []byte {
	parts := make([][]byte, len(spans))
	for i, s := range spans {
		parts[i] = s
	}
	src := bytes.Join(parts, []byte{'\n'})
	var at []int
	for _, m := range hexID.FindAllSubmatchIndex(src, -1) {
		if m[4] >= 0 {
			at = append(at, m[4])
		}
	}
	out := make([]byte, len(src))
	return func(k int) []byte {
		copy(out, src)
		prefix := fmt.Sprintf("%08x", k)
		for _, i := range at {
			copy(out[i:i+8], prefix)
		}
		return out
	}
}

// BigOTLPDoc writes one OTLP/JSON document of at least size bytes under
// dir, pretty-printed as `jq .` or a trace backend's export writes it: one
// resource, one scope and, in its spans array, the spans of BigOTLP's
// fixture again and again as new traces (a trace's spans together), and
// returns its path.
func BigOTLPDoc(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "big.otlp.json")
	return path, writeOTLPDoc(path, func(_ int, total int64) bool { return total < size })
}

// writeOTLPDoc writes BigOTLPDoc's document at path, copies of the
// fixture's spans while more(copies written, bytes written).
func writeOTLPDoc(path string, more func(k int, total int64) bool) error {
	resource, scope, spans, err := supervisorParts()
	if err != nil {
		return err
	}
	var total int64
	w, err := create(path, &total)
	if err != nil {
		return err
	}
	indent := func(raw []byte, prefix string) string {
		var b bytes.Buffer
		json.Indent(&b, raw, prefix, "  ")
		return b.String()
	}
	w.rawText("{\n  \"resourceSpans\": [\n    {\n      \"resource\": " + indent(resource, "      ") +
		",\n      \"scopeSpans\": [\n        {\n          \"scope\": " + indent(scope, "          ") + ",\n          \"spans\": [\n")
	copies := copyIDs(spans)
	for k := 0; more(k, total); k++ {
		for i, s := range bytes.Split(copies(k), []byte{'\n'}) {
			sep := ",\n"
			if k == 0 && i == 0 {
				sep = ""
			}
			w.rawText(sep + "            " + indent(s, "            "))
		}
	}
	w.rawText("\n          ]\n        }\n      ]\n    }\n  ]\n}\n")
	return w.close()
}

// OTLPShapes writes the same copies of BigOTLP's fixture (each a trace
// of its own) in the three shapes an OTLP file comes in — JSON lines (a
// span a line), one pretty-printed JSON document (BigOTLPDoc), one
// protobuf request (BigOTLPProto) — under dir, and returns their paths.
func OTLPShapes(dir string, copies int) (lines, doc, proto string, err error) {
	lines, doc, proto = filepath.Join(dir, "shapes.otlp.jsonl"), filepath.Join(dir, "shapes.otlp.json"), filepath.Join(dir, "shapes.otlp.pb")
	resource, scope, spans, err := supervisorParts()
	if err != nil {
		return "", "", "", err
	}
	var total int64
	w, err := create(lines, &total)
	if err != nil {
		return "", "", "", err
	}
	c := copyIDs(spans)
	for k := 0; k < copies; k++ {
		for _, s := range bytes.Split(c(k), []byte{'\n'}) {
			w.raw(`{"resourceSpans":[{"resource":` + string(resource) + `,"scopeSpans":[{"scope":` + string(scope) + `,"spans":[` + string(s) + `]}]}]}`)
		}
	}
	if err := w.close(); err != nil {
		return "", "", "", err
	}
	if err := writeOTLPDoc(doc, func(k int, _ int64) bool { return k < copies }); err != nil {
		return "", "", "", err
	}
	return lines, doc, proto, writeOTLPProto(proto, func(int) int { return copies })
}

// BigOTLPProto writes one OTLP/protobuf ExportTraceServiceRequest of at
// least size bytes under dir: one resource_spans of one scope_spans
// whose spans are BigOTLP's fixture's again and again as new traces, in
// the order pdata (a Collector's dump) writes fields, the spans before
// their scope and the scope spans before their resource; and returns its
// path.
func BigOTLPProto(dir string, size int64) (string, error) {
	path := filepath.Join(dir, "big.otlp.pb")
	return path, writeOTLPProto(path, func(each int) int { return int((size + int64(each) - 1) / int64(each)) })
}

// writeOTLPProto writes BigOTLPProto's request at path, copies(bytes of
// one copy) copies of the fixture's spans.
func writeOTLPProto(path string, copies func(each int) int) error {
	resource, scope, spans, err := supervisorParts()
	if err != nil {
		return err
	}
	copyOf := copyIDs(spans)
	// copy k's spans as protobuf: pdata's encoding of a request of them,
	// its span fields cut out (ids are fixed-size: each copy is as long)
	var u ptrace.JSONUnmarshaler
	var m ptrace.ProtoMarshaler
	var resField, scopeField []byte
	spanFields := func(k int) ([]byte, error) {
		doc := []byte(`{"resourceSpans":[{"resource":` + string(resource) + `,"scopeSpans":[{"scope":` + string(scope) + `,"spans":[` +
			string(bytes.ReplaceAll(copyOf(k), []byte{'\n'}, []byte{','})) + `]}]}]}`)
		td, err := u.UnmarshalTraces(doc)
		if err != nil {
			return nil, err
		}
		req, err := m.MarshalTraces(td)
		if err != nil {
			return nil, err
		}
		rs, _ := fieldOf(req, 1)
		resField, _ = rawFieldOf(rs, 1)
		ss, _ := fieldOf(rs, 2)
		scopeField, _ = rawFieldOf(ss, 1)
		var spans []byte
		for _, f := range fieldsOf(ss) {
			if n, _, _ := protowire.ConsumeTag(f); n == 2 {
				spans = append(spans, f...)
			}
		}
		return spans, nil
	}
	first, err := spanFields(0)
	if err != nil {
		return err
	}
	n := copies(len(first))
	// in the order pdata (the Collector) writes: each message's fields
	// last first, the spans before their scope, the scope spans before
	// their resource
	ssLen := n*len(first) + len(scopeField)
	ss := protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.BytesType), uint64(ssLen))
	rsLen := len(ss) + ssLen + len(resField)
	head := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.BytesType), uint64(rsLen))
	head = append(head, ss...)
	var total int64
	w, err := create(path, &total)
	if err != nil {
		return err
	}
	w.rawText(string(head))
	for k := 0; k < n; k++ {
		b := first
		if k > 0 {
			if b, err = spanFields(k); err != nil {
				w.close()
				return err
			}
		}
		if len(b) != len(first) {
			w.close()
			return fmt.Errorf("copy %d of the spans is %d bytes, not %d", k, len(b), len(first))
		}
		w.rawText(string(b))
	}
	w.rawText(string(scopeField) + string(resField))
	return w.close()
}

// fieldOf is the value of the first length-delimited field num of msg.
func fieldOf(msg []byte, num protowire.Number) ([]byte, bool) {
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return nil, false
		}
		v := protowire.ConsumeFieldValue(n, typ, msg[l:])
		if v < 0 {
			return nil, false
		}
		if n == num && typ == protowire.BytesType {
			b, _ := protowire.ConsumeBytes(msg[l:])
			return b, true
		}
		msg = msg[l+v:]
	}
	return nil, false
}

// fieldsOf is msg's fields, each tag and all.
func fieldsOf(msg []byte) [][]byte {
	var out [][]byte
	for len(msg) > 0 {
		n, typ, l := protowire.ConsumeTag(msg)
		if l < 0 {
			return out
		}
		v := protowire.ConsumeFieldValue(n, typ, msg[l:])
		if v < 0 {
			return out
		}
		out = append(out, msg[:l+v])
		msg = msg[l+v:]
	}
	return out
}

// rawFieldOf is the first field num of msg, tag and all.
func rawFieldOf(msg []byte, num protowire.Number) ([]byte, bool) {
	for _, f := range fieldsOf(msg) {
		if n, _, _ := protowire.ConsumeTag(f); n == num {
			return f, true
		}
	}
	return nil, false
}

// rawText writes s as it is.
func (s *sizedWriter) rawText(t string) {
	if s.err != nil {
		return
	}
	*s.n += int64(len(t))
	_, s.err = s.w.WriteString(t)
}
