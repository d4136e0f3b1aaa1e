package otel

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"
)

// One OTLP/protobuf ExportTraceServiceRequest in a file (any input that
// reads at an offset) is read as the JSON document is (doc.go): a field at
// a time with protowire, descending resource_spans (1) → scope_spans (2) →
// spans (2), handing pdata small requests of one resource, one scope and a
// batch of spans. The resource and scope may come after the spans they
// hold — pdata, so the Collector, writes each message's fields last first
// — so each ResourceSpans and ScopeSpans is first walked over by its tags
// and lengths alone (reading a few bytes a field), its other fields read,
// and then its scope spans or spans read in turn. Fields the request does
// not define are skipped, as pdata skips them. Input that cannot be read
// at an offset (a pipe) is read whole, as before.

// protoReader reads wire-format fields of ra from start: in turn through
// br, counting the offset, and at an offset for the walks ahead.
type protoReader struct {
	ctx   context.Context
	ra    io.ReaderAt
	start int64
	br    *bufio.Reader
	off   int64 // from start
	lim   Limits
	st    *Stats
	fn    func(*Span) error
	rs    int // resource_spans read
	u     ptrace.ProtoUnmarshaler
}

func (p *protoReader) ReadByte() (byte, error) {
	b, err := p.br.ReadByte()
	if err == nil {
		p.off++
	}
	return b, err
}

// broken is the error of an encoding that breaks at offset off.
func broken(off int64, why string) error {
	return &notOTLP{"OTLP/protobuf", fmt.Sprintf("its protobuf encoding breaks at byte %d (%s)", off, why)}
}

func readErr(off int64, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return broken(off, "the input ends inside a field")
	}
	if err.Error() == "binary: varint overflows a 64-bit integer" {
		return broken(off, "a number longer than 64 bits")
	}
	return err
}

// readProto reads the request of ra from start (see above).
func readProto(ctx context.Context, ra io.ReaderAt, start int64, lim Limits, st *Stats, fn func(*Span) error) error {
	p := &protoReader{ctx: ctx, ra: ra, start: start, br: bufio.NewReaderSize(io.NewSectionReader(ra, start, 1<<62), 64<<10), lim: lim, st: st, fn: fn}
	for {
		v, err := binary.ReadUvarint(p)
		if err == io.EOF {
			break
		}
		if err != nil {
			return readErr(p.off, err)
		}
		num, typ := protowire.DecodeTag(v)
		if num == 1 && typ == protowire.BytesType {
			n, err := binary.ReadUvarint(p)
			if err != nil {
				return readErr(p.off, err)
			}
			if err := p.resource(int64(n)); err != nil {
				return err
			}
			continue
		}
		if err := p.skip(num, typ); err != nil {
			return err
		}
	}
	if p.rs == 0 {
		return &notOTLP{"OTLP/protobuf", fmt.Sprintf("no resource spans in %d bytes", p.off)}
	}
	return nil
}

// wireField is one field of a message walked over: its number, its
// encoding's place (from start) and length, tag and all.
type wireField struct {
	num      protowire.Number
	bytes    bool // length-delimited
	off, len int64
}

// walk lists the fields of the message of n bytes at off, reading only
// tags, lengths and fixed-size values.
func (p *protoReader) walk(off, n int64) ([]wireField, error) {
	var out []wireField
	var buf [2 * binary.MaxVarintLen64]byte
	if n > 0 {
		// its last byte is there: a length the input does not hold is
		// refused before any field is read
		if _, err := p.ra.ReadAt(buf[:1], p.start+off+n-1); err != nil {
			return nil, broken(off, "the input ends inside a field")
		}
	}
	for at, end := off, off+n; at < end; {
		k, err := p.ra.ReadAt(buf[:min(int64(len(buf)), end-at)], p.start+at)
		if k == 0 && err != nil {
			return nil, readErr(at, err)
		}
		b := buf[:k]
		num, typ, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			return nil, broken(at, wireWhy(tl))
		}
		var vl int
		switch typ {
		case protowire.BytesType:
			l, ll := protowire.ConsumeVarint(b[tl:])
			if ll < 0 {
				return nil, broken(at, wireWhy(ll))
			}
			if l > uint64(end-at) {
				return nil, broken(at, "a field longer than the message holding it")
			}
			vl = ll + int(l)
		case protowire.VarintType:
			_, vl = protowire.ConsumeVarint(b[tl:])
		case protowire.Fixed32Type:
			vl = 4
		case protowire.Fixed64Type:
			vl = 8
		default:
			vl = -2
		}
		if vl < 0 {
			return nil, broken(at, wireWhy(vl))
		}
		f := wireField{num, typ == protowire.BytesType, at, int64(tl + vl)}
		if f.off+f.len > end {
			return nil, broken(at, "a field longer than the message holding it")
		}
		out = append(out, f)
		at += f.len
	}
	return out, nil
}

// read is the encoding of field f, read at its offset.
func (p *protoReader) read(f wireField) ([]byte, error) {
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.NewSectionReader(p.ra, p.start+f.off, f.len)); err != nil {
		return nil, readErr(f.off, err)
	}
	if int64(b.Len()) != f.len {
		return nil, broken(f.off, "the input ends inside a field")
	}
	return b.Bytes(), nil
}

// skip reads past the value of a field in turn.
func (p *protoReader) skip(num protowire.Number, typ protowire.Type) error {
	at := p.off
	switch typ {
	case protowire.VarintType:
		if _, err := binary.ReadUvarint(p); err != nil {
			return readErr(at, err)
		}
		return nil
	case protowire.Fixed32Type, protowire.Fixed64Type, protowire.BytesType:
		n := uint64(4)
		if typ == protowire.Fixed64Type {
			n = 8
		} else if typ == protowire.BytesType {
			var err error
			if n, err = binary.ReadUvarint(p); err != nil {
				return readErr(at, err)
			}
		}
		if _, err := p.discard(int64(n)); err != nil {
			return err
		}
		return nil
	}
	return broken(at, wireWhy(-4))
}

// discard reads past n bytes in turn.
func (p *protoReader) discard(n int64) (int64, error) {
	m, err := io.CopyN(io.Discard, p.br, n)
	p.off += m
	if err != nil {
		return m, readErr(p.off, err)
	}
	return m, nil
}

// others is the encoding of the fields of a message walked over but its
// repeated messages (field 2: a ResourceSpans' scope spans, a ScopeSpans'
// spans), read at their offsets.
func (p *protoReader) others(fields []wireField) ([]byte, error) {
	var head []byte
	for _, f := range fields {
		if f.num != 2 || !f.bytes {
			b, err := p.read(f)
			if err != nil {
				return nil, err
			}
			head = append(head, b...)
		}
	}
	return head, nil
}

// resource reads one ResourceSpans of n bytes at the current offset.
func (p *protoReader) resource(n int64) error {
	ri := p.rs
	p.rs++
	fields, err := p.walk(p.off, n)
	if err != nil {
		return err
	}
	head, err := p.others(fields) // the fields but its scope spans
	if err != nil {
		return err
	}
	for sj := 0; ; {
		if len(fields) == 0 {
			return nil
		}
		f := fields[0]
		fields = fields[1:]
		if f.num != 2 || !f.bytes {
			if _, err := p.discard(f.len); err != nil {
				return err
			}
			continue
		}
		// the tag and length, then the ScopeSpans
		tag := p.off
		if _, err := binary.ReadUvarint(p); err != nil {
			return readErr(tag, err)
		}
		m, err := binary.ReadUvarint(p)
		if err != nil {
			return readErr(tag, err)
		}
		if err := p.scope(int64(m), ri, sj, head); err != nil {
			return err
		}
		sj++
	}
}

// scope reads one ScopeSpans of n bytes at the current offset, its spans
// in batches.
func (p *protoReader) scope(n int64, ri, sj int, res []byte) error {
	fields, err := p.walk(p.off, n)
	if err != nil {
		return err
	}
	head, err := p.others(fields) // the fields but its spans
	if err != nil {
		return err
	}
	var batch []byte
	k0, k := 0, 0
	flush := func() error {
		if k == k0 {
			return nil
		}
		ss := protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), append(append([]byte(nil), head...), batch...))
		if err := p.parse(append(append([]byte(nil), res...), ss...), ri, sj, k0); err != nil {
			return err
		}
		batch, k0 = batch[:0], k
		return nil
	}
	for _, f := range fields {
		if f.num != 2 || !f.bytes {
			if _, err := p.discard(f.len); err != nil {
				return err
			}
			continue
		}
		start := len(batch)
		batch = append(batch, make([]byte, f.len)...)
		m, err := io.ReadFull(p.br, batch[start:])
		p.off += int64(m)
		if err != nil {
			return readErr(p.off, err)
		}
		if k++; k-k0 >= docBatch || len(batch) >= docBatchBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

// parse hands pdata a request of the one ResourceSpans rs and emits its
// spans; a problem is said at resource_spans ri, scope_spans sj (when
// sj >= 0), the spans from k0.
func (p *protoReader) parse(rs []byte, ri, sj, k0 int) error {
	if err := p.ctx.Err(); err != nil {
		return err
	}
	req := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), rs)
	td, err := p.u.UnmarshalTraces(req)
	if err != nil {
		return &notOTLP{"OTLP/protobuf", fmt.Sprintf("resource_spans[%d].scope_spans[%d], the spans from %d before byte %d, do not have the types of an ExportTraceServiceRequest", ri, sj, k0, p.off)}
	}
	return emit(td, p.lim, p.st, p.fn)
}
