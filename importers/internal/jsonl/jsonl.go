// Package jsonl reads a JSON-lines file one line at a time with bounded
// memory: a line longer than the limit is skipped (and said so), blank lines
// are passed over, and the last line of a file still being written — one
// with no newline yet — is marked so an importer can tolerate it.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// MaxLine is the longest line a Scanner returns; longer lines are skipped
// and reported by TooLong, so one huge record cannot take the memory.
const MaxLine = 64 << 20

// Scanner reads lines. The zero value is not usable; call New.
type Scanner struct {
	r       *bufio.Reader
	max     int
	line    int
	buf     []byte
	tooLong bool
	partial bool
	err     error
	done    bool
}

// New returns a Scanner of r with the MaxLine limit.
func New(r io.Reader) *Scanner { return NewSize(r, MaxLine) }

// NewSize returns a Scanner whose lines are at most max bytes.
func NewSize(r io.Reader, max int) *Scanner {
	return &Scanner{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Scan moves to the next non-blank line and reports whether there is one.
// A line over the limit is returned empty with TooLong set.
func (s *Scanner) Scan() bool {
	for !s.done {
		s.buf = s.buf[:0]
		s.tooLong, s.partial = false, false
		for {
			chunk, err := s.r.ReadSlice('\n')
			if !s.tooLong {
				if len(s.buf)+len(chunk) > s.max+1 { // +1: the newline
					s.tooLong = true
					s.buf = s.buf[:0]
				} else {
					s.buf = append(s.buf, chunk...)
				}
			}
			if err == nil {
				break
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			s.done = true
			if !errors.Is(err, io.EOF) {
				s.err = err
			}
			s.partial = len(s.buf) > 0 || s.tooLong
			break
		}
		if len(s.buf) == 0 && !s.tooLong && !s.partial && s.done {
			return false
		}
		s.line++
		s.buf = bytes.TrimRight(s.buf, "\r\n")
		if s.tooLong || len(bytes.TrimSpace(s.buf)) > 0 {
			if s.tooLong {
				s.buf = s.buf[:0]
			}
			return true
		}
	}
	return false
}

// Bytes is the current line without its line ending; valid until the next Scan.
func (s *Scanner) Bytes() []byte { return s.buf }

// Line is the 1-based number of the current line in the file.
func (s *Scanner) Line() int { return s.line }

// TooLong reports whether the current line was over the limit (and skipped).
func (s *Scanner) TooLong() bool { return s.tooLong }

// Partial reports whether the current line is the file's last and has no
// newline: a live session's line still being written, when it does not parse.
func (s *Scanner) Partial() bool { return s.partial }

// Err is the read error that ended the scan, if any (not io.EOF).
func (s *Scanner) Err() error { return s.err }
