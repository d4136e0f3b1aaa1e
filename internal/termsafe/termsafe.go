// Package termsafe is the one sanitizer of untrusted text for people
// (DESIGN §11, Untrusted text): every human-facing output of inspect
// passes through it, so no escape sequence in a task, a model's answer, a
// tool result, a name or an imported file can act on the terminal (clear
// the screen, set the window title, write the clipboard with OSC 52, hide
// a link with OSC 8), and no such text turns into Markdown structure in
// the Markdown the audit, diff and prompt-cache reports write (Markdown,
// Code).
//
// C0 controls other than newline and tab, DEL, C1 controls, the
// bidirectional embedding, override and isolate controls (U+202A–U+202E,
// U+2066–U+2069, which reorder what a line shows) and invalid UTF-8 bytes
// are written visibly: ESC as \x1b, a C1 control as \u009b, an override
// as \u202e, a stray byte as \xff. Everything else passes unchanged.
//
// JSON (and SARIF) shown on a terminal goes through its JSON form
// instead (JSON, NewJSONWriter): the same characters written as JSON
// escapes (\u007f, \u009b, \u202e), which JSON encoders leave raw and a
// terminal would act on, so the document stays valid and carries the
// text as data.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// clean reports whether s needs no change (the common case, checked
// without allocating).
func clean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\t':
		case c < 0x20 || c == 0x7f:
			return false
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(s[i:])
			if (r == utf8.RuneError && size == 1) || (r >= 0x80 && r <= 0x9f) || bidi(r) {
				return false
			}
			i += size - 1
		}
	}
	return true
}

// String returns s with every control character but newline and tab, and
// every invalid UTF-8 byte, written visibly.
func String(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	write(&b, s, false)
	return b.String()
}

// JSON returns JSON text s (what a JSON encoder wrote) with every such
// character written as a JSON escape: \u007f, \u009b, \u202e (an encoder
// leaves them raw in strings; it escapes the C0 controls itself), a stray
// byte as \ufffd. Valid JSON stays valid JSON of the same value, but for
// stray bytes, which are not JSON.
func JSON(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	write(&b, s, true)
	return b.String()
}

func write(b *strings.Builder, s string, js bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			switch {
			case (c >= 0x20 || c == '\n' || c == '\t') && c != 0x7f:
				b.WriteByte(c)
			case js && c == '\r':
				b.WriteByte(c) // white space between JSON tokens
			case js:
				fmt.Fprintf(b, `\u%04x`, c)
			default:
				fmt.Fprintf(b, `\x%02x`, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1 && js:
			b.WriteString(`\ufffd`)
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, c)
		case (r >= 0x80 && r <= 0x9f) || bidi(r):
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
}

// Writer sanitizes everything written through it. A UTF-8 sequence split
// across two writes is held back until it is complete (or Flush).
type Writer struct {
	w    io.Writer
	held []byte
	js   bool
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// NewJSONWriter returns a Writer over w for JSON text (and other data
// formats shown on a terminal): it writes what it sanitizes as JSON.
func NewJSONWriter(w io.Writer) *Writer { return &Writer{w: w, js: true} }

func (s *Writer) sanitized(p []byte) string {
	if s.js {
		return JSON(string(p))
	}
	return String(string(p))
}

// Write sanitizes p and writes it; it reports len(p) on success, as if p
// had been written as it was.
func (s *Writer) Write(p []byte) (int, error) {
	data := p
	if len(s.held) > 0 {
		data = append(s.held, p...)
		s.held = nil
	}
	// Hold back an incomplete UTF-8 sequence at the end.
	if n := incompleteTail(data); n > 0 {
		s.held = append([]byte(nil), data[len(data)-n:]...)
		data = data[:len(data)-n]
	}
	if _, err := io.WriteString(s.w, s.sanitized(data)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back (an incomplete sequence, written visibly).
func (s *Writer) Flush() error {
	if len(s.held) == 0 {
		return nil
	}
	held := s.held
	s.held = nil
	_, err := io.WriteString(s.w, s.sanitized(held))
	return err
}

// incompleteTail is the length of a UTF-8 sequence that p ends in the
// middle of (0 when it ends on a boundary).
func incompleteTail(p []byte) int {
	for n := 1; n <= 3 && n <= len(p); n++ {
		c := p[len(p)-n]
		if c < 0x80 {
			return 0
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-n:]) {
				return n
			}
			return 0
		}
	}
	return 0
}

// bidi reports whether r is a bidirectional embedding, override or
// isolate control (U+202A–U+202E, U+2066–U+2069): invisible, it reorders
// the text around it as shown, so a line can read otherwise than it is
// ("Trojan Source").
func bidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}
