package termsafe_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/internal/mdcheck"
	"github.com/inspect-dev/inspect/internal/termsafe"
)

// hostile are texts a model, a tool or an imported file may put in a name
// or a message: each Markdown construct, a table pipe, HTML, an entity, a
// line break that would start a list item or a heading, a terminal escape.
var hostile = []string{
	"*bold* _em_ **strong** __strong__",
	"`code` ``two`` ```fence```",
	"[link](http://example.com) ![img](x.png) <http://example.com>",
	"https://example.com www.example.com someone@example.com",
	"<b>html</b> <script>alert(1)</script> <!-- c -->",
	"a | b | c",
	"~~struck~~ ~one~",
	"&amp; &lt;b&gt; &#96;",
	"# heading",
	"line\n# heading\n- item\n> quote",
	"line\r- item\r---",
	`back\slash \* \`,
	"x\x1b]0;title\x07 \u009b2J",
}

// visible is how the text must read: on one line, controls written visibly.
func visible(s string) string { return strings.ReplaceAll(termsafe.String(s), "\n", " ") }

func TestMarkdown_Hostile(t *testing.T) {
	for _, s := range hostile {
		for _, c := range []struct {
			name, doc string
			text      string
			structure []string
		}{
			{"paragraph", "before " + termsafe.Markdown(s) + " after\n", "before " + visible(s) + " after\n", []string{"p", "/p"}},
			{"list item", "- before " + termsafe.Markdown(s) + " after\n", "\nbefore " + visible(s) + " after\n\n", []string{"ul", "li", "/li", "/ul"}},
			{"strong", "agent **" + termsafe.Markdown(s) + "** then\n", "agent " + visible(s) + " then\n", []string{"p", "strong", "/strong", "/p"}},
			{"table cell", "| a | b |\n| --- | --- |\n| " + termsafe.Markdown(s) + " | 1 |\n", "", []string{"table", "thead", "tr", "th", "/th", "th", "/th", "/tr", "/thead", "tbody", "tr", "td", "/td", "td", "/td", "/tr", "/tbody", "/table"}},
		} {
			if got := mdcheck.Structure(c.doc); !slices.Equal(got, c.structure) {
				t.Errorf("%s of %q: structure %v, want %v\n%s", c.name, s, got, c.structure, mdcheck.HTML(c.doc))
			}
			if c.text != "" {
				if got := mdcheck.Text(c.doc); got != c.text {
					t.Errorf("%s of %q reads %q, want %q", c.name, s, got, c.text)
				}
			}
		}
		if cell := mdcheck.Text("| a |\n| --- |\n| " + termsafe.Markdown(s) + " |\n"); !strings.Contains(cell, visible(s)) {
			t.Errorf("table cell of %q reads %q", s, cell)
		}
	}
}

func TestCode_Hostile(t *testing.T) {
	for _, s := range append(hostile, "`", "``", "a`", "`a", "agents/`x`.md") {
		doc := "at " + termsafe.Code(s) + " end\n"
		if got, want := mdcheck.Structure(doc), []string{"p", "code", "/code", "/p"}; !slices.Equal(got, want) {
			t.Errorf("code of %q: structure %v, want %v\n%s", s, got, want, mdcheck.HTML(doc))
		}
		if got, want := mdcheck.Text(doc), "at "+visible(s)+" end\n"; got != want {
			t.Errorf("code of %q reads %q, want %q", s, got, want)
		}
	}
	// what has no backtick is code as it was
	if got := termsafe.Code("agents.yaml:4"); got != "`agents.yaml:4`" {
		t.Errorf("Code = %q", got)
	}
}
