package ask

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// This file edits JSON at the byte level. A recorded request is never
// decoded and re-encoded as a whole: that would reorder keys, change number
// and escape spellings and break the byte-identical prefix that prompt
// caching and the comparison with the recording depend on. Instead we find
// the byte spans of top-level fields and of the messages array's elements,
// and splice new bytes between them.

// span is a half-open byte range [start, end) of a JSON value inside a body.
type span struct{ start, end int }

// field is one top-level member of a JSON object: its key and the span of its value.
type field struct {
	key string
	val span
}

// object is the layout of a top-level JSON object.
type object struct {
	fields []field
	close  int // offset of the closing '}'
}

// get returns the field called key, or false.
func (o *object) get(key string) (field, bool) {
	for _, f := range o.fields {
		if f.key == key {
			return f, true
		}
	}
	return field{}, false
}

// errNotObject is returned for a body that is not one JSON object.
var errNotObject = errors.New("not a JSON object")

// parseObject finds the top-level fields of the JSON object in b.
func parseObject(b []byte) (*object, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errNotObject
	}
	o := new(object)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := t.(string)
		if !ok {
			return nil, errNotObject
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("value of %q: %w", key, err)
		}
		end := int(dec.InputOffset())
		o.fields = append(o.fields, field{key: key, val: span{end - len(raw), end}})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errNotObject
	}
	o.close = int(dec.InputOffset()) - 1
	if rest := bytes.TrimSpace(b[o.close+1:]); len(rest) > 0 {
		return nil, fmt.Errorf("%d bytes after the JSON object", len(rest))
	}
	return o, nil
}

// parseArray returns the spans of the elements of the JSON array that
// occupies s in b.
func parseArray(b []byte, s span) ([]span, error) {
	dec := json.NewDecoder(bytes.NewReader(b[s.start:s.end]))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil, errors.New("not a JSON array")
	}
	var out []span
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		end := int(dec.InputOffset())
		out = append(out, span{s.start + end - len(raw), s.start + end})
	}
	return out, nil
}

// splice returns b with the bytes of s replaced by repl; b is not modified.
func splice(b []byte, s span, repl []byte) []byte {
	out := make([]byte, 0, len(b)-(s.end-s.start)+len(repl))
	out = append(out, b[:s.start]...)
	out = append(out, repl...)
	return append(out, b[s.end:]...)
}

// setField returns body with the top-level field key set to the JSON value
// val: its value bytes are replaced where the key exists, otherwise the
// member is appended after the last one. Every other byte is kept.
func setField(body []byte, key string, val []byte) ([]byte, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	if f, ok := o.get(key); ok {
		return splice(body, f.val, val), nil
	}
	k, _ := json.Marshal(key)
	member := append(append(k, ':'), val...)
	if len(o.fields) == 0 {
		return splice(body, span{o.close, o.close}, member), nil
	}
	at := o.fields[len(o.fields)-1].val.end
	return splice(body, span{at, at}, append([]byte{','}, member...)), nil
}

// marshal encodes v compactly without HTML escaping, so the appended
// messages read as written in --dry-run output.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// removeField returns body without its top-level member key (and the
// comma that joined it); every other byte is kept. A body without key is
// returned as it is.
func removeField(body []byte, key string) ([]byte, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	for i, f := range o.fields {
		if f.key != key {
			continue
		}
		// The member starts at its key: the first '"' after the previous
		// value (or the opening brace).
		from := 0
		if i > 0 {
			from = o.fields[i-1].val.end
		} else {
			from = bytes.IndexByte(body, '{') + 1
		}
		to := f.val.end
		if i == 0 && len(o.fields) > 1 {
			// drop the comma after it instead of the one before
			next := o.fields[1]
			keyStart := bytes.LastIndexByte(body[:next.val.start], '"')
			keyStart = bytes.LastIndexByte(body[:keyStart], '"')
			to = keyStart
		}
		return append(append([]byte{}, body[:from]...), body[to:]...), nil
	}
	return body, nil
}
