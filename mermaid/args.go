package mermaid

import (
	"encoding/json"
	"fmt"
	"strings"
)

// scalarValues returns the top-level scalar values of a JSON object in the
// order they are written (nested objects and arrays are skipped). ok is false
// when args is not one JSON object.
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
		case json.Delim: // skip a nested object or array
			for depth := 1; depth > 0; {
				t, err := dec.Token()
				if err != nil {
					return nil, false
				}
				if d, ok := t.(json.Delim); ok {
					if d == '{' || d == '[' {
						depth++
					} else {
						depth--
					}
				}
			}
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
