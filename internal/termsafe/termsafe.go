// Package termsafe is the one sanitizer of untrusted text for people
// (DESIGN §11, Untrusted text): every human-facing output of inspect
// passes through it, so no escape sequence in a task, a model's answer, a
// tool result, a name or an imported file can act on the terminal (clear
// the screen, set the window title, write the clipboard with OSC 52, hide
// a link with OSC 8), and no such text turns into Markdown structure in
// the Markdown the audit, diff and prompt-cache reports write (Markdown,
// Code).
//
// C0 controls other than newline and tab, DEL, C1 controls and invalid
// UTF-8 bytes are written visibly: ESC as \x1b, a C1 control as \u009b,
// a stray byte as \xff. Everything else passes unchanged. JSON, SARIF and
// JUnit output does not go through it: their encoders carry such text as
// escaped data.
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
			if (r == utf8.RuneError && size == 1) || (r >= 0x80 && r <= 0x9f) {
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
	write(&b, s)
	return b.String()
}

func write(b *strings.Builder, s string) {
	for i := 0; i < len(s); {
		c := s[i]
		if c < 0x80 {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				fmt.Fprintf(b, `\x%02x`, c)
			} else {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(b, `\x%02x`, c)
		case r >= 0x80 && r <= 0x9f:
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
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

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
	if _, err := io.WriteString(s.w, String(string(data))); err != nil {
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
	_, err := io.WriteString(s.w, String(string(held)))
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
