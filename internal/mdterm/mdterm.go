// Package mdterm renders Markdown on a terminal through glamour (inspect
// audit, cache, show and ask on a terminal): it readies the Markdown for
// glamour — sanitized by termsafe, so no escape sequence of the text can
// act; a table too wide for the terminal written as a list, so no cell is
// cut inside a word; a word longer than a line broken; glamour's wrap
// points inside paths and identifiers held — and gives the held points back
// in glamour's output.
package mdterm

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/glamour"

	"github.com/inspect-dev/inspect/internal/termsafe"
)

// Render is md rendered by r for a terminal width columns wide: r's
// rendering of Input, with the held wrap points given back.
func Render(r *glamour.TermRenderer, md string, width int) (string, error) {
	out, err := r.Render(Input(md, width))
	if err != nil {
		return "", err
	}
	return Output(out), nil
}

// Input is Markdown made ready for glamour on a terminal width
// columns wide: sanitized (termsafe: no escape sequence of the text can
// act); a table wider than the terminal written as a list (fitTables:
// glamour would cut its cells inside words); a word too long for a line (longer than width less glamour's
// margins and indents) broken into pieces of half a line, so two fill a
// line; and each of glamour's wrap points (- . , ; +) between two letters
// or digits held as a private-use character, which Output turns
// back — outside fenced code blocks. So a path or identifier that fits a
// line is never wrapped inside ("agents/fork-\ninstructions.md",
// "fork-instructions.\nmd" before: glamour's block wrap breaks after any
// of those, and its nested list items are wrapped a level too wide),
// and one long word — a 100,000-character agent name, a base64 blob in a
// tool result — no longer costs glamour's word wrap, which measures the
// word it is building once per character added, time in the square of its
// length (29 s); the terminal would break such a word at its edge anyway.
func Input(md string, width int) string {
	return keepHyphens(breakLongWords(fitTables(termsafe.String(md), width), max(width-Indent, 20), max(width/2, 20)))
}

// Output is glamour's rendering of Input with the held
// wrap points given back, so what is copied from the terminal is the text
// itself.
func Output(s string) string {
	if !strings.ContainsAny(s, HeldPoints) {
		return s
	}
	return giveBack.Replace(s)
}

// New is the glamour renderer of style for a terminal width
// columns wide.
func New(style string, width int) (*glamour.TermRenderer, error) {
	return glamour.NewTermRenderer(glamour.WithStylePath(style), glamour.WithWordWrap(width))
}

// Indent is how many columns of a line glamour's styles may take
// before a word: the document margin on both sides and a nested list's
// or a block quote's indent.
const Indent = 8

// wrapPoints are the characters glamour's word wrap may break a line
// after (its block wrap's breakpoints " ,.;-+|", less the space and the
// table pipe), and HeldPoints the private-use characters that stand for
// them, in order, between Input and Output.
const (
	wrapPoints = "-.,;+"
	HeldPoints = "\ue000\ue001\ue002\ue003\ue004"
)

var giveBack = strings.NewReplacer("\ue000", "-", "\ue001", ".", "\ue002", ",", "\ue003", ";", "\ue004", "+")

// keepHyphens holds each of wrapPoints that stands between two letters or
// digits (agents/fork-instructions.md, 1,024, c+d), and a sign between an
// opening bracket and its figure (a change, "(+145)", "(-7693)"), outside
// fenced code blocks (which glamour does not wrap). One next to a space or to another
// mark (a list bullet, a rule, a table's delimiter row, --flag, the end
// of a sentence) is left as it is.
func keepHyphens(md string) string {
	if !strings.ContainsAny(md, wrapPoints) {
		return md
	}
	var b strings.Builder
	b.Grow(len(md) + len(md)/16)
	eachLine(md, func(line string, fenced bool) {
		if fenced || !strings.ContainsAny(line, wrapPoints) {
			b.WriteString(line)
			return
		}
		prev := rune(0)
		for i, c := range line {
			if k := strings.IndexRune(wrapPoints, c); k >= 0 && (isWordRune(prev) || prev == '(' && (c == '+' || c == '-')) {
				if next, _ := utf8.DecodeRuneInString(line[i+1:]); isWordRune(next) {
					b.WriteRune([]rune(HeldPoints)[k])
					prev = c
					continue
				}
			}
			b.WriteRune(c)
			prev = c
		}
	})
	return b.String()
}

func isWordRune(c rune) bool { return unicode.IsLetter(c) || unicode.IsDigit(c) }

// eachLine calls fn with each line of md (its newline included) and
// whether it is inside a fenced code block or is a fence.
func eachLine(md string, fn func(line string, fenced bool)) {
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
			fn(line, true)
		case strings.HasPrefix(trimmed, "```"):
			fence = "```"
			fn(line, true)
		case strings.HasPrefix(trimmed, "~~~"):
			fence = "~~~"
			fn(line, true)
		default:
			fn(line, false)
		}
	}
}

// breakLongWords puts a space after every piece runes of each run of
// non-blank characters longer than width, outside fenced code blocks
// (which glamour does not wrap); a shorter word is left whole.
func breakLongWords(md string, width, piece int) string {
	if !hasLongWord(md, width) {
		return md
	}
	var b strings.Builder
	b.Grow(len(md) + len(md)/piece)
	eachLine(md, func(line string, fenced bool) {
		if fenced {
			b.WriteString(line)
			return
		}
		for len(line) > 0 {
			// the blanks, then the word after them
			i := strings.IndexFunc(line, func(c rune) bool { return !isBlank(c) })
			if i < 0 {
				i = len(line)
			}
			b.WriteString(line[:i])
			line = line[i:]
			j := strings.IndexFunc(line, isBlank)
			if j < 0 {
				j = len(line)
			}
			word := line[:j]
			line = line[j:]
			if utf8.RuneCountInString(word) <= width {
				b.WriteString(word)
				continue
			}
			run := 0
			for _, c := range word {
				if run++; run > piece {
					b.WriteByte(' ')
					run = 1
				}
				b.WriteRune(c)
			}
		}
	})
	return b.String()
}

func isBlank(c rune) bool { return c == ' ' || c == '\t' || c == '\n' }

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
