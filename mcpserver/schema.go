package mcpserver

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// outputSchema is the JSON Schema a tool declares for its structured
// content of Go type T: the go-sdk's inference, except that a slice or a
// map may also be null, as encoding/json writes a nil one (the inference
// would refuse "tags": null, and with it the whole result), an object may
// hold members beyond its properties (the inference applies Go's field
// promotion, not encoding/json's: it loses money.AgentCost's "amount",
// promoted from an embedded Amount, and would refuse it), and a type
// that marshals itself is what it writes: a string for an
// encoding.TextMarshaler (a severity), any value for a json.Marshaler.
// It panics on a type that has no schema, as mcp.AddTool does.
func outputSchema[T any]() *jsonschema.Schema {
	own := map[reflect.Type]*jsonschema.Schema{}
	marshalers(reflect.TypeFor[T](), map[reflect.Type]bool{}, own)
	s, err := jsonschema.ForType(reflect.TypeFor[T](), &jsonschema.ForOptions{TypeSchemas: own})
	if err != nil {
		panic(fmt.Sprintf("output schema of %v: %v", reflect.TypeFor[T](), err))
	}
	for _, p := range s.Properties {
		nullable(p)
	}
	if s.Items != nil {
		nullable(s.Items)
	}
	if s.Properties != nil {
		s.AdditionalProperties = nil
	}
	return s
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// marshalers finds the types under t that write their own JSON and sets
// their schema in own.
func marshalers(t reflect.Type, seen map[reflect.Type]bool, own map[reflect.Type]*jsonschema.Schema) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return
	}
	seen[t] = true
	if t == reflect.TypeFor[time.Time]() {
		return // the inference's own: a string
	}
	switch p := reflect.PointerTo(t); {
	case t.Implements(jsonMarshaler) || p.Implements(jsonMarshaler):
		// any JSON value, spelled out: the inference would make an empty
		// schema under a pointer accept null alone
		own[t] = &jsonschema.Schema{Types: []string{"null", "boolean", "object", "array", "number", "string"}}
		return
	case t.Implements(textMarshaler) || p.Implements(textMarshaler):
		own[t] = &jsonschema.Schema{Type: "string"}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() || f.Anonymous {
				marshalers(f.Type, seen, own)
			}
		}
	case reflect.Slice, reflect.Array:
		marshalers(t.Elem(), seen, own)
	case reflect.Map:
		marshalers(t.Key(), seen, own)
		marshalers(t.Elem(), seen, own)
	}
}

// nullable lets every array and map (an object schema without properties)
// in s be null, s included, and every object hold more members than its
// properties.
func nullable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Properties != nil {
		s.AdditionalProperties = nil
	}
	if s.Type == "array" || (s.Type == "object" && s.Properties == nil) {
		s.Types, s.Type = []string{"null", s.Type}, ""
	}
	for _, p := range s.Properties {
		nullable(p)
	}
	nullable(s.Items)
	nullable(s.AdditionalProperties)
	for _, p := range s.PrefixItems {
		nullable(p)
	}
	for _, p := range s.AnyOf {
		nullable(p)
	}
	for _, p := range s.Defs {
		nullable(p)
	}
}
