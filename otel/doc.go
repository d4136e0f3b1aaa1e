package otel

import (
	"bufio"
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
// as it comes, not whole: a scanner of its structure (scanner) descends
// resourceSpans → scopeSpans → spans and hands pdata small documents of
// one resource, one scope and a batch of spans, so memory stays that of a
// batch (and the largest span), not the document's. The OTLP/JSON
// encoders (pdata's, protojson's) write a resource before its scopeSpans
// and a scope before its spans; an element whose spans come before the
// resource or scope they belong to is held whole and parsed once it has
// ended, as before. Documents that follow one another in the input (a
// lines file pretty-printed by jq, of which a whole read kept the first
// only) are read in turn.

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
	sc    *scanner
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
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	d := &docReader{ctx: ctx, sc: &scanner{br: br}, lim: lim, st: st, fn: fn}
	for n := 0; ; n++ {
		c, err := d.sc.ws()
		if err == io.EOF && n > 0 {
			return nil, nil
		}
		if err != nil {
			return nil, d.sc.fail(err)
		}
		if c != '{' {
			if n > 0 {
				return nil, &notOTLP{"OTLP/JSON", fmt.Sprintf("after its first document, at byte %d, it holds a JSON %s, not another {\"resourceSpans\": [...]}", d.sc.off, startKind(c))}
			}
			return nil, &notOTLP{"OTLP/JSON", fmt.Sprintf("it is a JSON %s, not an object {\"resourceSpans\": [...]}", startKind(c))}
		}
		d.sc.next()
		empty, err := d.top()
		if err != nil {
			return nil, err
		}
		if !d.found && !empty {
			return nil, &notOTLP{"OTLP/JSON", "the JSON object has no resourceSpans member (an export request is {\"resourceSpans\": [...]})"}
		}
		if one {
			return br, nil
		}
	}
}

// top reads the members of a document after its '{' up to its '}',
// Jaeger's {"result": {...}} included; empty says it had none.
func (d *docReader) top() (empty bool, err error) {
	empty = true
	err = d.sc.members(func(key string) error {
		empty = false
		switch key {
		case "resourceSpans", "resource_spans":
			d.found = true
			return d.array(key, d.resource)
		case "result":
			c, err := d.sc.ws()
			if err != nil {
				return d.sc.fail(err)
			}
			if c != '{' {
				return d.sc.skip()
			}
			d.sc.next()
			_, err = d.top()
			return err
		}
		return d.sc.skip()
	})
	return empty, err
}

// array reads the array at path, calling each after its elements'
// opening '{'; null is an empty array.
func (d *docReader) array(path string, each func(path string) error) error {
	c, err := d.sc.ws()
	if err != nil {
		return d.sc.fail(err)
	}
	if c == 'n' {
		return d.sc.literal("null")
	}
	if c != '[' {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an array", path, startKind(c))}
	}
	d.sc.next()
	return d.sc.elements(func(i int) error {
		c, err := d.sc.ws()
		if err != nil {
			return d.sc.fail(err)
		}
		ep := fmt.Sprintf("%s[%d]", path, i)
		if c != '{' {
			return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an object", ep, startKind(c))}
		}
		d.sc.next()
		return each(ep)
	})
}

// resource reads one resourceSpans element: its resource, then its
// scopeSpans one by one.
func (d *docReader) resource(path string) error {
	ri := d.rs
	d.rs++
	var head []member
	sawResource, held, sj := false, false, 0
	err := d.sc.members(func(key string) error {
		if (key == "scopeSpans" || key == "scope_spans") && sawResource && !held {
			return d.array(path+"."+key, func(p string) error {
				sj++
				return d.scope(p, ri, sj-1, head)
			})
		}
		raw, err := d.sc.raw(nil)
		if err != nil {
			return err
		}
		switch key {
		case "resource":
			sawResource = true
		case "scopeSpans", "scope_spans", "deprecatedScopeSpans", "deprecated_scope_spans":
			held = true // before its resource: parsed whole below
		}
		head = append(head, member{key, raw})
		return nil
	})
	if err != nil {
		return err
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
	err := d.sc.members(func(key string) error {
		if key == "spans" && sawScope && !held {
			return d.spans(path+".spans", ri, sj, res, head)
		}
		raw, err := d.sc.raw(nil)
		if err != nil {
			return err
		}
		switch key {
		case "scope":
			sawScope = true
		case "spans":
			held = true // before its scope: parsed whole below
		}
		head = append(head, member{key, raw})
		return nil
	})
	if err != nil {
		return err
	}
	if held {
		return d.parse(ri, sj, 0, res, head, nil)
	}
	return nil
}

// spans reads a spans array, handing pdata docBatch spans at a time.
func (d *docReader) spans(path string, ri, sj int, res, scope []member) error {
	c, err := d.sc.ws()
	if err != nil {
		return d.sc.fail(err)
	}
	if c == 'n' {
		return d.sc.literal("null")
	}
	if c != '[' {
		return &notOTLP{"OTLP/JSON", fmt.Sprintf("%s is a JSON %s, not an array", path, startKind(c))}
	}
	d.sc.next()
	var buf []byte // the batch's spans, one after another
	var ends []int
	var at []int64 // where each span starts in the input
	k0 := 0
	flush := func() error {
		if len(ends) == 0 {
			return nil
		}
		spans := make([]json.RawMessage, len(ends))
		for i, e := range ends {
			b := 0
			if i > 0 {
				b = ends[i-1]
			}
			spans[i] = buf[b:e]
		}
		if err := d.parse(ri, sj, k0, res, scope, spans, at...); err != nil {
			return err
		}
		k0 += len(ends)
		buf, ends, at = buf[:0], ends[:0], at[:0]
		return nil
	}
	err = d.sc.elements(func(int) error {
		if _, err := d.sc.ws(); err != nil {
			return d.sc.fail(err)
		}
		at = append(at, d.sc.off)
		start := len(buf)
		if buf, err = d.sc.raw(buf); err != nil {
			if why := syntaxAt(buf[start:], at[len(at)-1]); why != "" {
				return &notOTLP{"OTLP/JSON", why} // what threw the brackets off
			}
			return err
		}
		ends = append(ends, len(buf))
		if len(ends) >= docBatch || len(buf) >= docBatchBytes {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// parse hands pdata the small document of res's members, scope's (with
// sj >= 0) and spans (when scope is not nil), and emits its spans. Its
// problems are said at their place in the whole document: resourceSpans
// ri, scopeSpans sj, the spans from k0 (starting at the offsets at).
func (d *docReader) parse(ri, sj, k0 int, res, scope []member, spans []json.RawMessage, at ...int64) error {
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
		// a span that is not JSON: said at its byte in the input
		for i, s := range spans {
			if i < len(at) && !json.Valid(s) {
				if why := syntaxAt(s, at[i]); why != "" {
					return &notOTLP{"OTLP/JSON", why}
				}
				return &notOTLP{"OTLP/JSON", fmt.Sprintf("it is not valid JSON (the value at byte %d)", at[i])}
			}
		}
		return &notOTLP{"OTLP/JSON", placed(jsonProblem(b.Bytes(), err), ri, sj, k0)}
	}
	return emit(td, d.lim, d.st, d.fn)
}

// syntaxAt says where the JSON value v, starting at byte at of the input,
// breaks; "" if nothing before its end does.
func syntaxAt(v []byte, at int64) string {
	var x any
	var se *json.SyntaxError
	if err := json.Unmarshal(v, &x); errors.As(err, &se) && se.Offset < int64(len(v)) {
		return fmt.Sprintf("it is not valid JSON (%s, at byte %d)", strings.TrimPrefix(se.Error(), "json: "), at+se.Offset)
	}
	return ""
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

// scanner reads JSON's structure from br — objects, arrays, member
// names — and values as their bytes, unparsed (pdata parses them, and
// says what is wrong with one), faster than a token decoder: a span is
// copied once, its strings skipped a run at a time.
type scanner struct {
	br  *bufio.Reader
	off int64 // bytes read
}

// ws skips white space and returns the next byte, unread.
func (s *scanner) ws() (byte, error) {
	for {
		b, err := s.br.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			s.br.Discard(1)
			s.off++
			continue
		}
		return b[0], nil
	}
}

// next reads the byte ws returned.
func (s *scanner) next() {
	s.br.Discard(1)
	s.off++
}

// fail says err, met at the current byte, in jsonProblem's words.
func (s *scanner) fail(err error) error {
	var n *notOTLP
	if errors.As(err, &n) {
		return err
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &notOTLP{"OTLP/JSON", "it is not valid JSON: " + jsonWhy(io.ErrUnexpectedEOF)}
	}
	return err // the reader's own
}

func (s *scanner) unexpected(c byte, looking string) error {
	return &notOTLP{"OTLP/JSON", fmt.Sprintf("it is not valid JSON (invalid character %s %s, at byte %d)", quoteChar(c), looking, s.off+1)}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

// literal reads the literal word (null).
func (s *scanner) literal(word string) error {
	for i := 0; i < len(word); i++ {
		c, err := s.br.ReadByte()
		if err != nil {
			return s.fail(err)
		}
		s.off++
		if c != word[i] {
			return s.unexpected(c, "in literal "+word)
		}
	}
	return nil
}

// item reads up to a container's next item: the white space before it
// and, but for the first (i == 0), the ',' after the one before. done is
// set at the container's end byte (read past); else c is the item's
// first byte, not yet read.
func (s *scanner) item(i int, end byte, after string) (c byte, done bool, err error) {
	if c, err = s.ws(); err != nil {
		return 0, false, s.fail(err)
	}
	if c == end {
		s.next()
		return c, true, nil
	}
	if i > 0 {
		if c != ',' {
			return 0, false, s.unexpected(c, after)
		}
		s.next()
		if c, err = s.ws(); err != nil {
			return 0, false, s.fail(err)
		}
	}
	return c, false, nil
}

// members reads an object's members after its '{' through its '}',
// calling fn with each name, the reader at its value.
func (s *scanner) members(fn func(key string) error) error {
	for i := 0; ; i++ {
		c, done, err := s.item(i, '}', "after object key:value pair")
		if err != nil || done {
			return err
		}
		if c != '"' {
			return s.unexpected(c, "looking for beginning of object key string")
		}
		raw, err := s.raw(nil)
		if err != nil {
			return err
		}
		var key string
		if err := json.Unmarshal(raw, &key); err != nil {
			return &notOTLP{"OTLP/JSON", fmt.Sprintf("it is not valid JSON (a member name %.40s, before byte %d)", raw, s.off)}
		}
		if c, err = s.ws(); err != nil {
			return s.fail(err)
		}
		if c != ':' {
			return s.unexpected(c, "after object key")
		}
		s.next()
		if err := fn(key); err != nil {
			return err
		}
	}
}

// elements reads an array's elements after its '[' through its ']',
// calling fn with each one's index, the reader at it.
func (s *scanner) elements(fn func(i int) error) error {
	for i := 0; ; i++ {
		if _, done, err := s.item(i, ']', "after array element"); err != nil || done {
			return err
		}
		if err := fn(i); err != nil {
			return err
		}
	}
}

// skip reads past the next value.
func (s *scanner) skip() error {
	_, err := s.raw(nil)
	return err
}

// raw appends the next value's bytes to dst: a string, an object or an
// array through its end (strings in it skipped whole, so brackets in them
// do not count), or a number or literal up to the byte after it. Only
// its brackets are checked; what is in it is the parser's to check.
func (s *scanner) raw(dst []byte) ([]byte, error) {
	c, err := s.ws()
	if err != nil {
		return dst, s.fail(err)
	}
	switch c {
	case '}', ']', ',', ':':
		return dst, s.unexpected(c, "looking for beginning of value")
	}
	depth, inString, escaped := 0, false, false
	scalar := c != '{' && c != '[' && c != '"'
	for {
		chunk, err := s.br.Peek(max(s.br.Buffered(), 1))
		if len(chunk) == 0 {
			if scalar && err == io.EOF && len(dst) > 0 {
				return dst, nil
			}
			return dst, s.fail(err)
		}
		i := 0
		done := false
	scan:
		for i < len(chunk) {
			b := chunk[i]
			if inString {
				if escaped {
					escaped = false
					i++
					continue
				}
				// to the next quote or backslash at once
				j := bytes.IndexAny(chunk[i:], "\"\\")
				if j < 0 {
					i = len(chunk)
					break
				}
				i += j
				if chunk[i] == '\\' {
					escaped = true
					i++
					continue
				}
				inString = false
				i++
				if depth == 0 {
					done = true
					break scan
				}
				continue
			}
			if scalar {
				switch b {
				case ' ', '\t', '\r', '\n', ',', '}', ']', ':':
					done = true
					break scan
				}
				i++
				continue
			}
			switch b {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					i++
					done = true
					break scan
				}
			}
			i++
		}
		dst = append(dst, chunk[:i]...)
		s.br.Discard(i)
		s.off += int64(i)
		if done {
			return dst, nil
		}
		if len(dst) > MaxLine {
			return dst, &notOTLP{"OTLP/JSON", fmt.Sprintf("a value longer than %d MiB, at byte %d", MaxLine>>20, s.off-int64(len(dst)))}
		}
	}
}

// startKind names the JSON kind a value starting with c has.
func startKind(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 'n':
		return "null"
	case 't', 'f':
		return "boolean"
	}
	return "number"
}
