package termsafe

import "strings"

// markdownText escapes the characters that would turn inline text into
// Markdown structure: emphasis and strikethrough (* _ ~), code (`), links
// and images ([ ]), HTML and entities (< > &), table cells (|), headings
// (#), the backslash itself, and what GitHub's autolinks start at (://,
// www., @); a newline becomes a space, so the text stays on its line (a
// list item, a table row).
var markdownText = strings.NewReplacer("\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]",
	"<", "&lt;", ">", "&gt;", "|", "\\|", "#", "\\#", "~", "\\~", "&", "&amp;",
	"://", "\\://", "www.", "www\\.", "@", "\\@", "\n", " ")

// Markdown returns untrusted text (an agent or branch name, a message, a
// tool's arguments) as inline Markdown: in a paragraph, a list item, a
// heading or a table cell it reads as the text it is and never as
// structure, on one line, with its control characters written visibly as
// String writes them (a carriage return, which Markdown reads as a line
// break, included). Renderers of findings, diff and the prompt-cache
// report all write untrusted text through it.
func Markdown(s string) string { return markdownText.Replace(String(s)) }

// Code returns untrusted text as a Markdown code span, for a path or an id
// shown as code: backslash escapes do not work inside a code span, so the
// span is fenced by more backticks than the longest run of them in s, with
// a space inside when s starts or ends with one; a newline becomes a space
// and control characters are written visibly. Not for a table cell, where
// a | still ends the cell.
func Code(s string) string {
	s = strings.ReplaceAll(String(s), "\n", " ")
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 && (s[0] == '`' || s[len(s)-1] == '`') {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
