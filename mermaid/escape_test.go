package mermaid

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "read_file regions/eu.md", "read_file regions/eu.md"},
		{"empty", "", " "},
		{"only controls", "\r\x01", " "},
		{"quote", `say "hi"`, "say #quot;hi#quot;"},
		{"hash", "C# #tag #quot;", "C#35; #35;tag #35;quot;"},
		{"entity stays literal", "#12;", "#35;12;"},
		{"html", "<b>x</b> & y", "#lt;b#gt;x#lt;/b#gt; #amp; y"},
		{"named entity typed raw", "&lt;", "#amp;lt;"},
		{"backtick markdown", "`md`", "#96;md#96;"},
		{"katex", "$$x$$", "#36;#36;x#36;#36;"},
		{"backslash", `a\nb`, "a#92;nb"},
		{"colon", "style:#35;x", "style#58;#35;35;x"},
		{"newline", "a\nb", "a<br/>b"},
		{"crlf", "a\r\nb", "a<br/>b"},
		{"tab", "a\tb", "a b"},
		{"control chars dropped", "a\x01\x0c\x1fb\x7f", "ab"},
		{"noncharacters dropped", "a\uFFFE\uFFFFb", "ab"},
		{"init directive", "%%{init: {'theme':'dark'}}%%", "%#37;{init#58; {'theme'#58;'dark'}}%#37;"},
		{"comment marker", "%% x", "%#37; x"},
		{"single percent", "100% done", "100% done"},
		{"percents joined by a dropped control", "%\x17%", "%#37;"},
		{"triple percent", "%%%", "%#37;%"},
		{"keywords", "end graph subgraph click style", "end graph subgraph click style"},
		{"brackets", `"]; b["c`, `#quot;]; b[#quot;c`},
		{"safe punctuation", "( ) [ ] { } | , ; = @ * _ ~ '", "( ) [ ] { } | , ; = @ * _ ~ '"},
		{"unicode", "日本語 ✓ 😀", "日本語 ✓ 😀"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Escape(tt.in); got != tt.want {
				t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// escapeSeeds are FuzzEscape's seed corpus; TestMermaidParses also runs
// each escaped seed through the real Mermaid parser.
var escapeSeeds = []string{
	"",
	"plain text",
	`"]; click n1 call alert(1); x["`,
	"%%{init: {\"theme\":\"dark\",\"securityLevel\":\"loose\"}}%%",
	"end",
	"subgraph x\nend\nflowchart LR",
	"<script>alert(1)</script><b>bold</b>",
	"&lt;&copy;&#12;",
	"#quot; #12; #35; #x2665;",
	"`markdown` **bold**",
	"$$x^2$$",
	`C:\new\table \"q\"`,
	"style:#35;x classDef:#35;y;",
	"a\r\nb\nc\td",
	"\x00\x01\x08\x0b\x0c\x1f\x7f\u0085",
	"\uFFFE\uFFFF\uFEFF",
	"( ) [ ] { } | , ; = % @ * _ ~ '",
	"日本語 ✓ → é ñ 😀 #9829;",
	"\xff\xfe invalid",
	"%%%",
	"graph TD; A-->B",
	"-->|x|",
	"---\ntitle: x\n---",
}

// FuzzEscape checks that escaped text can never end a label, start a line,
// form a comment or directive, or carry a character that makes the SVG
// invalid XML. Run it with: go test ./mermaid -fuzz FuzzEscape
func FuzzEscape(f *testing.F) {
	for _, s := range escapeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Escape(s)
		if got == "" {
			t.Fatalf("Escape(%q) is empty", s)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Escape(%q) = %q is not UTF-8", s, got)
		}
		if strings.Contains(got, "%%") {
			t.Fatalf("Escape(%q) = %q contains %%%%", s, got)
		}
		// Outside the <br/> we write, no HTML may open.
		rest := strings.ReplaceAll(got, "<br/>", "")
		for _, r := range rest {
			switch {
			case strings.ContainsRune("\"<>&`$\\:", r):
				t.Fatalf("Escape(%q) = %q contains raw %q", s, got, r)
			case unicode.IsControl(r), r == 0xFFFE, r == 0xFFFF:
				t.Fatalf("Escape(%q) = %q contains control %U", s, got, r)
			}
		}
		// Every '#' starts one of our entities.
		for i := 0; i < len(rest); i++ {
			if rest[i] != '#' {
				continue
			}
			end := strings.IndexByte(rest[i:], ';')
			if end < 0 || !isEntity(rest[i+1:i+end]) {
				t.Fatalf("Escape(%q) = %q has a bare '#' at %d", s, got, i)
			}
		}
	})
}

func isEntity(s string) bool {
	switch s {
	case "35", "quot", "lt", "gt", "amp", "96", "36", "92", "58", "37":
		return true
	}
	return false
}
