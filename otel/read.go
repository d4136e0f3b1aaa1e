package otel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ErrNotOTLP says a body or file is neither OTLP/JSON nor OTLP/protobuf
// trace data.
var ErrNotOTLP = errors.New("not OTLP trace data (neither an OTLP/JSON nor an OTLP/protobuf ExportTraceServiceRequest)")

// Problem is one line of a file that could not be read; reading goes on.
type Problem struct {
	Line int // 1-based; 0 for the whole file
	Err  string
}

// Stats says what a Read saw.
type Stats struct {
	Spans     int       // spans handed to fn
	Truncated int       // attribute values cut to Limits.MaxValue
	Problems  []Problem // lines that could not be read, in file order
}

// MaxLine bounds one line of an OTLP/JSON lines file (one export request).
const MaxLine = 256 << 20

// Read reads OTLP trace data from r and calls fn with each span, as it
// comes: an OTLP/JSON lines file one request at a time (memory stays that
// of the largest line), one document a batch of spans at a time (doc.go,
// proto.go). The format is found from the content: a JSON object a line,
// one JSON document (pretty-printed, or Jaeger's {"result": ...} answer of
// /api/v3/traces), or else OTLP/protobuf (one ExportTraceServiceRequest or
// TracesData message; read whole unless r reads at an offset, as a file
// does). A malformed line is a Problem and reading goes on; data that is
// OTLP nowhere is ErrNotOTLP; a document found wrong halfway is an error
// after the spans before it. An error from fn stops the read.
func Read(ctx context.Context, r io.Reader, lim Limits, fn func(*Span) error) (Stats, error) {
	var st Stats
	ra, start := readerAt(r)
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(512)
	if len(head) == 0 {
		if err == io.EOF || err == nil {
			return st, fmt.Errorf("%w: the input is empty", ErrNotOTLP)
		}
		return st, err
	}
	if ra != nil && looksLikeProto(head) {
		// one ExportTraceServiceRequest read a field at a time (proto.go)
		return st, readProto(ctx, ra, start, lim, &st, fn)
	}
	if t := bytes.TrimLeft(head, " \t\r\n"); len(t) == 0 || t[0] != '{' { // protobuf may start with 0x0a, a newline
		data, err := io.ReadAll(br)
		if err != nil {
			return st, err
		}
		td, err := UnmarshalProto(data)
		if err != nil {
			return st, err
		}
		return st, emit(td, lim, &st, fn)
	}
	first, long, err := readFirstLine(br)
	if err != nil {
		return st, err
	}
	if long {
		// a first line longer than firstLineCap: a document (one line may
		// hold a whole export) read as it comes; lines may follow it
		rest, err := readDocs(ctx, io.MultiReader(bytes.NewReader(first), br), lim, &st, fn, true)
		if err != nil {
			return st, err
		}
		return st, readLines(ctx, bufio.NewReaderSize(rest, 64<<10), nil, 1, lim, &st, fn, true)
	}
	if _, perr := br.Peek(1); perr == io.EOF {
		// the whole input is one line (Jaeger's answer): parsed once,
		// not first checked for being a line of its own
		if td, err := UnmarshalJSON(first); err == nil {
			return st, emit(td, lim, &st, fn)
		}
	}
	if !json.Valid(bytes.TrimSpace(first)) {
		// not a line of its own: one (pretty-printed) document, read as
		// it comes (doc.go)
		_, err := readDocs(ctx, io.MultiReader(bytes.NewReader(first), br), lim, &st, fn, false)
		return st, err
	}
	return st, readLines(ctx, br, first, 1, lim, &st, fn, false)
}

// readerAt is r as an io.ReaderAt and where it stands, when it is one
// that seeks too (a file, a bytes.Reader); nil otherwise.
func readerAt(r io.Reader) (io.ReaderAt, int64) {
	a, ok := r.(io.ReaderAt)
	s, ok2 := r.(io.Seeker)
	if !ok || !ok2 {
		return nil, 0
	}
	off, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0
	}
	return a, off
}

// readFirstLine reads br's first line, up to firstLineCap bytes; long
// says it goes on (what was read is returned, the rest left in br).
func readFirstLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if err == bufio.ErrBufferFull {
			if len(line) > firstLineCap {
				return line, true, nil
			}
			continue
		}
		if err != nil && err != io.EOF {
			return nil, false, err
		}
		return line, false, nil
	}
}

// readLines reads OTLP/JSON lines from br, line first (nil: read the
// next), numbering them from n. after says lines came before (a first
// line read as a document): none valid here is then no error.
func readLines(ctx context.Context, br *bufio.Reader, line []byte, n int, lim Limits, st *Stats, fn func(*Span) error, after bool) error {
	var err error
	if line == nil {
		if line, err = readLine(br, nil); err != nil && err != io.EOF {
			return err
		}
	}
	var buf []byte // one line's bytes, reused: pdata copies what it keeps
	valid := 0
	for ; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			td, perr := UnmarshalJSON(line)
			if perr != nil {
				st.Problems = append(st.Problems, Problem{Line: n, Err: perr.Error()})
			} else {
				valid++
				if err := emit(td, lim, st, fn); err != nil {
					return err
				}
			}
		}
		if err == io.EOF {
			break
		}
		buf = line[:0]
		if line, err = readLine(br, buf); err != nil && err != io.EOF {
			if errors.Is(err, errLongLine) {
				st.Problems = append(st.Problems, Problem{Line: n + 1, Err: err.Error()})
				if line, err = skipLine(br, buf); err != nil && err != io.EOF {
					return err
				}
				n++
				continue
			}
			return err
		}
	}
	if valid == 0 && !after {
		return fmt.Errorf("%w: no line is one (line %d: %s)", ErrNotOTLP, st.Problems[0].Line, st.Problems[0].Err)
	}
	return nil
}

func emit(td ptrace.Traces, lim Limits, st *Stats, fn func(*Span) error) error {
	var ferr error
	st.Truncated += Flatten(td, lim, func(s *Span) {
		if ferr == nil {
			st.Spans++
			ferr = fn(s)
		}
	})
	return ferr
}

// UnmarshalJSON parses one OTLP/JSON ExportTraceServiceRequest (or
// TracesData, the same shape; ids in hex), unwrapping Jaeger's
// {"result": ...}. JSON that is not OTLP (no resourceSpans) is ErrNotOTLP.
func UnmarshalJSON(data []byte) (ptrace.Traces, error) {
	var u ptrace.JSONUnmarshaler
	if inner, ok := jaegerResult(data); ok {
		// Jaeger's answer, parsed once: before, it was parsed whole
		// (the unknown "result" skipped), read again as a RawMessage,
		// then parsed a third time inside
		if td, err := u.UnmarshalTraces(inner); err == nil && td.ResourceSpans().Len() > 0 {
			return td, nil
		}
	}
	td, err := u.UnmarshalTraces(data)
	if err != nil {
		return ptrace.Traces{}, &notOTLP{"OTLP/JSON", jsonProblem(data, err)}
	}
	if td.ResourceSpans().Len() > 0 {
		return td, nil
	}
	var w struct {
		Result json.RawMessage `json:"result"`
	}
	if bytes.Contains(data, []byte(`"result"`)) && json.Unmarshal(data, &w) == nil && len(w.Result) > 0 {
		if td, err := u.UnmarshalTraces(w.Result); err == nil && td.ResourceSpans().Len() > 0 {
			return td, nil
		}
	}
	if !bytes.Contains(data, []byte(`"resourceSpans"`)) && !bytes.Contains(data, []byte(`"resource_spans"`)) {
		if !json.Valid(data) {
			return ptrace.Traces{}, &notOTLP{"OTLP/JSON", jsonProblem(data, nil)}
		}
		if t := bytes.TrimSpace(data); !bytes.Equal(t, []byte("{}")) {
			return ptrace.Traces{}, &notOTLP{"OTLP/JSON", "the JSON object has no resourceSpans member (an export request is {\"resourceSpans\": [...]})"}
		}
	}
	return td, nil
}

// jaegerResult is the value of data when data is {"result": VALUE}, as
// Jaeger's API v3 answers, found without parsing VALUE (the caller's
// parse of it says whether it was one); ok false for anything else.
func jaegerResult(data []byte) ([]byte, bool) {
	t := bytes.TrimSpace(data)
	rest, ok := bytes.CutPrefix(t, []byte("{"))
	if !ok || !bytes.HasSuffix(rest, []byte("}")) {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(`"result"`)); !ok {
		return nil, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	if rest, ok = bytes.CutPrefix(rest, []byte(":")); !ok {
		return nil, false
	}
	inner := bytes.TrimSpace(rest[:len(rest)-1])
	if len(inner) == 0 || inner[0] != '{' || inner[len(inner)-1] != '}' {
		return nil, false // another member after it, or not an object
	}
	return inner, true
}

// UnmarshalProto parses one OTLP/protobuf ExportTraceServiceRequest.
func UnmarshalProto(data []byte) (ptrace.Traces, error) {
	var u ptrace.ProtoUnmarshaler
	td, err := u.UnmarshalTraces(data)
	if err != nil {
		return ptrace.Traces{}, &notOTLP{"OTLP/protobuf", protoProblem(data)}
	}
	if td.ResourceSpans().Len() == 0 && len(data) > 0 {
		why := fmt.Sprintf("no resource spans in %d bytes", len(data))
		if p := protoProblem(data); strings.HasPrefix(p, "it is JSON") {
			why = p
		}
		return ptrace.Traces{}, &notOTLP{"OTLP/protobuf", why}
	}
	return td, nil
}

var errLongLine = fmt.Errorf("line longer than %d MiB, skipped", MaxLine>>20)

func readLine(br *bufio.Reader, line []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxLine {
			return nil, errLongLine
		}
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// skipLine discards the rest of an over-long line and reads the next one.
func skipLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		_, err := br.ReadSlice('\n')
		if err == nil {
			return readLine(br, buf[:0])
		}
		if err != bufio.ErrBufferFull {
			return nil, err
		}
	}
}

// LooksLikeOTLP reports whether head, the first bytes of a file, look like
// OTLP trace data: an OTLP/JSON object naming resourceSpans, or a protobuf
// message whose first field is resource_spans holding a resource or scope
// spans.
func LooksLikeOTLP(head []byte) bool {
	if looksLikeProto(head) { // before trimming: 0x0a, its first byte, is a newline
		return true
	}
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	return bytes.Contains(t, []byte(`"resourceSpans"`)) || bytes.Contains(t, []byte(`"resource_spans"`))
}

func looksLikeProto(t []byte) bool {
	if len(t) < 3 || t[0] != 0x0a { // field 1 (resource_spans), length-delimited
		return false
	}
	i := 1
	for ; i < len(t) && i < 11 && t[i]&0x80 != 0; i++ { // the length varint
	}
	i++
	return i < len(t) && (t[i] == 0x0a || t[i] == 0x12) // resource (1) or scope_spans (2)
}
