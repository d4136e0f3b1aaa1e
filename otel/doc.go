package otel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// One OTLP/JSON document — an ExportTraceServiceRequest
// {"resourceSpans":[...]} as otel-cli, Jaeger, Tempo and a Collector's
// one-shot dumps write it, one line or pretty-printed over many — is read
// with a token decoder, not whole: it descends resourceSpans → scopeSpans
// → spans and hands pdata small documents of one resource, one scope and
// a batch of spans, so memory stays that of a batch (and the largest
// span), not the document's. The OTLP encoders write a resource before
// its scopeSpans and a scope before its spans (field order); an element
// whose spans come before the resource or scope they belong to is held
// whole and parsed once it has ended, as before. Documents that follow
// one another in the input (a lines file pretty-printed by jq) are read
// in turn.

// docBatch bounds the spans of one small document: this many, or
// docBatchBytes of their JSON, whichever comes first.
const (
	docBatch      = 256
	docBatchBytes = 1 << 20
)

// firstLineCap is how much of a file's first line Read holds to tell a
// lines file from one document; a longer first line is read as a document
// (one line may hold a whole export), and what follows it as lines.
const firstLineCap = 4 << 20

// member is one object member, its key and raw value, kept to go in
// front of each batch of spans.
type member struct {
	key string
	raw json.RawMessage
}

type docReader struct {
	ctx   context.Context
	dec   *json.Decoder
	lim   Limits
	st    *Stats
	fn    func(*Span) error
	found bool // a resourceSpans member was seen
	rs    int  // resourceSpans elements read, over all documents
	u     ptrace.JSONUnmarshaler
}

// readDocs reads the JSON documents of r in turn (one is usual); with
// one set, it stops after the first and returns the rest of the input.
func readDocs(ctx context.Context, r io.Reader, lim Limits, st *Stats, fn func(*Span) error, one bool) (io.Reader, error) {
	d := &docReader{ctx: ctx, dec: json.NewDecoder(r), lim: lim, st: st, fn: fn}
	for n := 0; ; n++ {
		tok, err := d.dec.Token()
		if err == io.EOF && n > 0 {
			return nil, nil
		}
		if err != nil {
			return nil, d.syntax(err)
		}
		if tok != json.Delim('{') {
			if n > 0 {
				return nil, &notOTLP{"OTLP/JSON", fmt.Sprintf("after its first document, at byte %d, it holds a JSON %s, not another {\"resourceSpans\": [...]}", d.dec.InputOffset(), tokKind(tok))}
			}
			return nil, &notOTLP{"OTLP/JSON", fmt.Sprintf("it is a JSON %s, not an object {\"resourceSpans\": [...]}", tokKind(tok))}
		}
		empty, err := d.top()
		if err != nil {
			return nil, err
		}
		if !d.found && !empty {
			return nil, &notOTLP{"OTLP/JSON", "the JSON object has no resourceSpans member (an export request is {\"resourceSpans\": [...]})"}
		}
		if one {
			return io.MultiReader(d.dec.Buffered(), r), nil
		}
	}
}

// top reads the members of a document after its '{' up to its '}',
// Jaeger's {"result": {...}} included; empty says it had none.
func (d *docReader) top() (empty bool, err error) {
	empty = true
	for d.dec.More() {
		empty = false
		key, err := d.key()
		if err != nil {
			return false, err
		}
		switch key {
		case "resourceSpans", "resource_spans":
			d.found = true
			if err := d.array(key, d.resource); err != nil {
				return false, err
			}
		case "result":
			tok, err := d.dec.Token()
			if err != nil {
				return false, d.syntax(err)
			}
			if tok != json.Delim('{') {
				if err := d.skip(tok); err != nil {
					return false, err
				}
				continue
			}
			if _, err := d.top(); err != nil {
				return false, err
			}
		default:
			if err := d.skipValue(); err != nil {
				return false, err
			}
		}
	}
	_, err = d.dec.Token() // '}'
	return empty, d.syntax(err)
}

// array reads the array at path, calling each with its elements' index
// after their opening token; null is an empty array.
func (d *docReader) array(path string, each func(path string, i int) error) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(err)
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an array", path, tokKind(tok))}
	}
	for i := 0; d.dec.More(); i++ {
		tok, err := d.dec.Token()
		if err != nil {
			return d.syntax(err)
		}
		ep := fmt.Sprintf("%s[%d]", path, i)
		if tok != json.Delim('{') {
			return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an object", ep, tokKind(tok))}
		}
		if err := each(ep, i); err != nil {
			return err
		}
	}
	_, err = d.dec.Token() // ']'
	return d.syntax(err)
}

// resource reads one resourceSpans element: its resource, then its
// scopeSpans one by one.
func (d *docReader) resource(path string, _ int) error {
	ri := d.rs
	d.rs++
	var head []member
	sawResource, held := false, false
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		if (key == "scopeSpans" || key == "scope_spans") && sawResource && !held {
			if err := d.array(path+"."+key, func(p string, j int) error { return d.scope(p, ri, j, head) }); err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return d.syntax(err)
		}
		switch key {
		case "resource":
			sawResource = true
		case "scopeSpans", "scope_spans", "deprecatedScopeSpans", "deprecated_scope_spans":
			held = true // before its resource: parsed whole below
		}
		head = append(head, member{key, raw})
	}
	if _, err := d.dec.Token(); err != nil { // '}'
		return d.syntax(err)
	}
	if held {
		return d.parse(ri, -1, 0, head, nil, nil)
	}
	return nil
}

// scope reads one scopeSpans element: its scope, then its spans in
// batches.
func (d *docReader) scope(path string, ri, sj int, res []member) error {
	var head []member
	sawScope, held := false, false
	for d.dec.More() {
		key, err := d.key()
		if err != nil {
			return err
		}
		if key == "spans" && sawScope && !held {
			if err := d.spans(path+".spans", ri, sj, res, head); err != nil {
				return err
			}
			continue
		}
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return d.syntax(err)
		}
		switch key {
		case "scope":
			sawScope = true
		case "spans":
			held = true // before its scope: parsed whole below
		}
		head = append(head, member{key, raw})
	}
	if _, err := d.dec.Token(); err != nil { // '}'
		return d.syntax(err)
	}
	if held {
		return d.parse(ri, sj, 0, res, head, nil)
	}
	return nil
}

// spans reads a spans array, handing pdata docBatch spans at a time.
func (d *docReader) spans(path string, ri, sj int, res, scope []member) error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(err)
	}
	if tok == nil {
		return nil
	}
	if tok != json.Delim('[') {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an array", path, tokKind(tok))}
	}
	var batch []json.RawMessage
	size, k0 := 0, 0
	for k := 0; d.dec.More(); k++ {
		var raw json.RawMessage
		if err := d.dec.Decode(&raw); err != nil {
			return d.syntax(err)
		}
		batch = append(batch, raw)
		if size += len(raw); len(batch) >= docBatch || size >= docBatchBytes {
			if err := d.parse(ri, sj, k0, res, scope, batch); err != nil {
				return err
			}
			batch, size, k0 = batch[:0], 0, k+1
		}
	}
	if _, err := d.dec.Token(); err != nil { // ']'
		return d.syntax(err)
	}
	if len(batch) > 0 {
		return d.parse(ri, sj, k0, res, scope, batch)
	}
	return nil
}

// parse hands pdata the small document of res's members, scope's (with
// sj >= 0) and spans (when scope is not nil), and emits its spans. Its
// problems are said at their place in the whole document: resourceSpans
// ri, scopeSpans sj, the spans from k0.
func (d *docReader) parse(ri, sj, k0 int, res, scope []member, spans []json.RawMessage) error {
	if err := d.ctx.Err(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(`{"resourceSpans":[{`)
	writeMembers(&b, res)
	if sj >= 0 {
		if len(res) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"scopeSpans":[{`)
		writeMembers(&b, scope)
		if spans != nil {
			if len(scope) > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"spans":[`)
			for i, s := range spans {
				if i > 0 {
					b.WriteByte(',')
				}
				b.Write(s)
			}
			b.WriteByte(']')
		}
		b.WriteString(`}]`)
	}
	b.WriteString(`}]}`)
	td, err := d.u.UnmarshalTraces(b.Bytes())
	if err != nil {
		return &notOTLP{"OTLP/JSON", placed(jsonProblem(b.Bytes(), err), ri, sj, k0)}
	}
	return emit(td, d.lim, d.st, d.fn)
}

func writeMembers(b *bytes.Buffer, ms []member) {
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.raw)
	}
}

var smallPath = regexp.MustCompile(`resourceSpans\[0\](\.scopeSpans\[0\](\.spans\[(\d+)\])?)?`)

// placed rewrites the first OTLP path of why, said of a small document
// parse built, to the place it has in the whole one.
func placed(why string, ri, sj, k0 int) string {
	m := smallPath.FindStringSubmatchIndex(why)
	if m == nil {
		return why
	}
	p := fmt.Sprintf("resourceSpans[%d]", ri)
	if m[2] >= 0 && sj >= 0 {
		p += fmt.Sprintf(".scopeSpans[%d]", sj)
		if m[6] >= 0 {
			k, _ := strconv.Atoi(why[m[6]:m[7]])
			p += fmt.Sprintf(".spans[%d]", k0+k)
		}
	} else if m[2] >= 0 {
		p = why[m[0]:m[1]]
		p = strings.Replace(p, "resourceSpans[0]", fmt.Sprintf("resourceSpans[%d]", ri), 1)
	}
	return why[:m[0]] + p + why[m[1]:]
}

// key reads an object's next member name.
func (d *docReader) key() (string, error) {
	tok, err := d.dec.Token()
	if err != nil {
		return "", d.syntax(err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", d.syntax(fmt.Errorf("a member name is %v", tok))
	}
	return k, nil
}

// skipValue reads past the next value without holding it.
func (d *docReader) skipValue() error {
	tok, err := d.dec.Token()
	if err != nil {
		return d.syntax(err)
	}
	return d.skip(tok)
}

// skip reads past the rest of the value tok starts.
func (d *docReader) skip(tok json.Token) error {
	depth := 0
	for {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
		var err error
		if tok, err = d.dec.Token(); err != nil {
			return d.syntax(err)
		}
	}
}

// syntax turns the decoder's errors into ErrNotOTLP in the words
// jsonProblem uses for a document read whole; nil stays nil.
func (d *docReader) syntax(err error) error {
	if err == nil {
		return nil
	}
	var n *notOTLP
	if errors.As(err, &n) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("it is not valid JSON (%s, at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &notOTLP{"OTLP/JSON", "it is not valid JSON: " + jsonWhy(io.ErrUnexpectedEOF)}
	}
	if strings.HasPrefix(err.Error(), "json: ") || strings.HasPrefix(err.Error(), "a member name") {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("it is not valid JSON (%s, near byte %d)", strings.TrimPrefix(err.Error(), "json: "), d.dec.InputOffset())}
	}
	return err // the reader's own
}

// tokKind names the JSON kind a token starts.
func tokKind(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '[' {
			return "array"
		}
		return "object"
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case string:
		return "string"
	}
	return "value"
}
