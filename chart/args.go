package chart

import (
	"encoding/json"
	"fmt"
	"strings"
)

// scalarValues returns the top-level values of a JSON object in the order
// they are written, shortened for a label: a scalar as it is, an array of
// scalars as "[a, b, c]", an array holding objects or arrays as "[N items]",
// a nested object as "{…}". ok is false when args is not one JSON object.
func scalarValues(args string) (vals []string, ok bool) {
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return nil, false
		}
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		switch t := t.(type) {
		case json.Delim:
			v, err := nested(dec, t)
			if err != nil {
				return nil, false
			}
			vals = append(vals, v)
		case string:
			vals = append(vals, t)
		case nil:
		default:
			vals = append(vals, fmt.Sprint(t))
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	return vals, true
}

// maxArrayItems bounds the items of an array written out in a label.
const maxArrayItems = 8

// nested reads the rest of the object or array open opened and says it in
// a few characters.
func nested(dec *json.Decoder, open json.Delim) (string, error) {
	var items []string
	n, flat := 0, open == '['
	for depth := 1; depth > 0; {
		t, err := dec.Token()
		if err != nil {
			return "", err
		}
		switch t := t.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				if depth == 1 {
					n++
				}
				depth++
				flat = false
			} else {
				depth--
			}
		default:
			if depth == 1 && open == '[' {
				n++
				if len(items) < maxArrayItems {
					switch t := t.(type) {
					case string:
						items = append(items, t)
					case nil:
						items = append(items, "null")
					default:
						items = append(items, fmt.Sprint(t))
					}
				}
			}
		}
	}
	switch {
	case open == '{':
		return "{…}", nil
	case n == 0:
		return "[]", nil
	case !flat:
		if n == 1 {
			return "[1 item]", nil
		}
		return fmt.Sprintf("[%d items]", n), nil
	case n > len(items):
		return "[" + strings.Join(items, ", ") + ", …]", nil
	}
	return "[" + strings.Join(items, ", ") + "]", nil
}
