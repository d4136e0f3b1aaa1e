package main

import (
	"strings"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/internal/termsafe"
)

// glamourInput is Markdown made ready for glamour on a terminal width
// columns wide: sanitized (termsafe: no escape sequence of the text can
// act), and with every word longer than half a line broken into pieces
// of half a line (so two fill a line within glamour's margins and
// indents), outside fenced code blocks. glamour's word wrap measures the
// word it is building once per character added, so one long word — a
// 100,000-character agent name, a base64 blob in a tool result — took
// time in the square of its length (29 s); the terminal would break such
// a word at its edge anyway.
func glamourInput(md string, width int) string {
	return breakLongWords(termsafe.String(md), max(width/2, 20))
}

// breakLongWords puts a space after every width runes of a run of
// non-blank characters longer than width, outside fenced code blocks
// (which glamour does not wrap).
func breakLongWords(md string, width int) string {
	if !hasLongWord(md, width) {
		return md
	}
	var b strings.Builder
	b.Grow(len(md) + len(md)/width)
	fence := ""
	for len(md) > 0 {
		line := md
		if i := strings.IndexByte(md, '\n'); i >= 0 {
			line = md[:i+1]
		}
		md = md[len(line):]
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			b.WriteString(line)
			continue
		case strings.HasPrefix(trimmed, "```"):
			fence = "```"
			b.WriteString(line)
			continue
		case strings.HasPrefix(trimmed, "~~~"):
			fence = "~~~"
			b.WriteString(line)
			continue
		}
		run := 0 // runes of the word so far
		for _, c := range line {
			if c == ' ' || c == '\t' || c == '\n' {
				run = 0
			} else if run++; run > width {
				b.WriteByte(' ')
				run = 1
			}
			b.WriteRune(c)
		}
	}
	return b.String()
}

// hasLongWord reports whether md has a run of more than width non-blank
// runes (so most Markdown is returned unchanged, uncopied).
func hasLongWord(md string, width int) bool {
	run := 0
	for i := 0; i < len(md); {
		c, size := rune(md[i]), 1
		if c >= utf8.RuneSelf {
			c, size = utf8.DecodeRuneInString(md[i:])
		}
		i += size
		if c == ' ' || c == '\t' || c == '\n' {
			run = 0
		} else if run++; run > width {
			return true
		}
	}
	return false
}
