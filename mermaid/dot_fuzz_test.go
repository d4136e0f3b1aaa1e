package mermaid

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzDOTQuote checks that a quoted DOT label can never end the string,
// form a Graphviz escape (\N, \G, \l…) other than our \n, carry an HTML
// entity Graphviz would decode (&#1; made SVGs invalid XML), or hold a
// control character. Run it with: go test ./mermaid -fuzz FuzzDOTQuote
func FuzzDOTQuote(f *testing.F) {
	for _, s := range append(escapeSeeds, "x&#1;y", "&lt;b&gt;", `\N \G \l`, "a\"b", "&amp;") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := dotQuote(s)
		if len(q) < 2 || q[0] != '"' || q[len(q)-1] != '"' {
			t.Fatalf("dotQuote(%q) = %q is not one quoted string", s, q)
		}
		in := q[1 : len(q)-1]
		for i := 0; i < len(in); i++ {
			switch in[i] {
			case '\\':
				if i+1 >= len(in) || (in[i+1] != '\\' && in[i+1] != '"' && in[i+1] != 'n') {
					t.Fatalf("dotQuote(%q) = %q forms a Graphviz escape at %d", s, q, i)
				}
				i++
			case '"':
				t.Fatalf("dotQuote(%q) = %q has a bare quote at %d", s, q, i)
			case '&':
				if !strings.HasPrefix(in[i:], "&amp;") {
					t.Fatalf("dotQuote(%q) = %q has an entity Graphviz would decode at %d", s, q, i)
				}
			}
		}
		for _, r := range in {
			if unicode.IsControl(r) {
				t.Fatalf("dotQuote(%q) = %q holds control %U", s, q, r)
			}
		}
	})
}
