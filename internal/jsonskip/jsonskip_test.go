package jsonskip

import (
	"encoding/json"
	"testing"
)

func TestValue(t *testing.T) {
	for _, c := range []struct {
		in   string
		at   int
		end  int
		okay bool
	}{
		{`"a\"b" ,`, 0, 6, true},
		{`{"k":["}",{"x":"]"}],"n":1} tail`, 0, 27, true},
		{`[1, 2]`, 0, 6, true},
		{`12.5e3,`, 0, 6, true},
		{`true}`, 0, 4, true},
		{`null:`, 0, 4, true},
		{`{"k": "open`, 0, 0, false},
		{`"open\"`, 0, 0, false},
		{`[[1]`, 0, 0, false},
		{``, 0, 0, false},
		{`,`, 0, 0, false},
		{`{"a": {"b": 1}}`, 6, 14, true},
	} {
		end, ok := Value([]byte(c.in), c.at)
		if end != c.end || ok != c.okay {
			t.Errorf("Value(%q, %d) = %d, %v; want %d, %v", c.in, c.at, end, ok, c.end, c.okay)
		}
	}
	if got := Space([]byte(" \t\r\n x"), 0); got != 5 {
		t.Errorf("Space = %d, want 5", got)
	}
}

// FuzzValue: on any bytes Value stays in range; on a valid JSON document
// (as encoding/json says) with nothing after it, it ends exactly at its end.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"]",{"b":null}]}`, `"x\\"`, `-0.5`, `[{}]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		i := Space(b, 0)
		end, ok := Value(b, i)
		if ok && (end <= i || end > len(b)) {
			t.Fatalf("Value = %d outside (%d, %d]", end, i, len(b))
		}
		if n := len(b); n > 0 && json.Valid(b) && Space(b, 0) == 0 && !isSpace(b[n-1]) {
			if !ok || end != n {
				t.Fatalf("valid %q: Value = %d, %v; want %d", b, end, ok, n)
			}
		}
	})
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
