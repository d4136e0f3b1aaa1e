package mermaid

import (
	"strings"
	"unicode"
)

// Escape makes untrusted text (tasks, arguments, results, reasons, agent,
// branch and tool names) safe inside a double-quoted Mermaid label and inside
// a %% comment line. It follows the rules verified against mermaid 11 in
// ../shared/tools/mermaid/README.md, in one pass over the runes, so the '#'
// of an entity it writes is never escaped again:
//
//	#  → #35;     (Mermaid turns #word; into &word;)
//	"  → #quot;   (ends the label)
//	<  → #lt;     >  → #gt;     & → #amp;   (labels are HTML)
//	`  → #96;     (a backtick label is Markdown)
//	$  → #36;     ($$x$$ is KaTeX)
//	\  → #92;     (\n would become a line break)
//	:  → #58;     (with style/classDef on the line, ':' then an entity drops a ';')
//	%  → #37;     when the text written so far ends in '%', so no "%%" (a
//	              comment or a %%{init}%% directive) survives
//	newline → <br/>; tab → space; CR and other control characters, U+FFFE
//	and U+FFFF are dropped (they make the SVG invalid XML)
//
// Keywords such as end or graph, brackets, braces and pipes are safe inside
// quotes and pass through. An empty result becomes a single space, because
// Mermaid rejects an empty quoted label. Invalid UTF-8 becomes U+FFFD.
func Escape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		switch r {
		case '#':
			b.WriteString("#35;")
		case '"':
			b.WriteString("#quot;")
		case '<':
			b.WriteString("#lt;")
		case '>':
			b.WriteString("#gt;")
		case '&':
			b.WriteString("#amp;")
		case '`':
			b.WriteString("#96;")
		case '$':
			b.WriteString("#36;")
		case '\\':
			b.WriteString("#92;")
		case ':':
			b.WriteString("#58;")
		case '%':
			// Looking at what was written, not at the input: a dropped
			// control character must not join two '%'.
			if out := b.String(); len(out) > 0 && out[len(out)-1] == '%' {
				b.WriteString("#37;")
			} else {
				b.WriteByte('%')
			}
		case '\n':
			b.WriteString("<br/>")
		case '\t':
			b.WriteByte(' ')
		case 0xFFFE, 0xFFFF:
			// not characters in XML: drop
		default:
			if unicode.IsControl(r) {
				continue // CR and the other control characters
			}
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return " "
	}
	return b.String()
}
