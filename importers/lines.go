package importers

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxLine bounds one line of a JSON Lines source. A longer line is skipped
// (reported as ErrLineTooLong), so memory stays bounded whatever the file.
const MaxLine = 32 << 20

// ErrLineTooLong is returned by LineReader.Next for a line over MaxLine; the
// reader has skipped it and goes on with the next one.
var ErrLineTooLong = errors.New("line longer than 32 MiB")

// LineReader reads a JSON Lines source one line at a time in bounded
// memory, numbering lines from 1 and skipping blank ones.
type LineReader struct {
	r   *bufio.Reader
	n   int
	buf []byte
	pos int64 // bytes read from r
	// the span in the input of the last line returned, its line end
	// and blanks around it included
	from, to int64
}

// NewLineReader reads r.
func NewLineReader(r io.Reader) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10)}
}

// Next returns the next non-blank line without its line end, its number,
// and whether it ended the input without a newline (the last line of a file
// still being written, which may be cut short). At the end it returns
// io.EOF. The line is valid until the next call.
func (l *LineReader) Next() (line []byte, n int, unterminated bool, err error) {
	for {
		l.buf = l.buf[:0]
		l.n++
		l.from = l.pos
		tooLong := false
		for {
			chunk, rerr := l.r.ReadSlice('\n')
			l.pos += int64(len(chunk))
			l.to = l.pos
			if !tooLong {
				if len(l.buf)+len(chunk) > MaxLine {
					tooLong = true
					l.buf = l.buf[:0]
				} else {
					l.buf = append(l.buf, chunk...)
				}
			}
			if rerr == bufio.ErrBufferFull {
				continue
			}
			if rerr == io.EOF {
				if tooLong {
					return nil, l.n, true, ErrLineTooLong
				}
				line = bytes.TrimSpace(l.buf)
				if len(line) == 0 {
					return nil, l.n, false, io.EOF
				}
				return line, l.n, true, nil
			}
			if rerr != nil {
				return nil, l.n, false, fmt.Errorf("line %d: %w", l.n, rerr)
			}
			break
		}
		if tooLong {
			return nil, l.n, false, ErrLineTooLong
		}
		if line = bytes.TrimSpace(l.buf); len(line) > 0 {
			return line, l.n, false, nil
		}
	}
}

// Span returns where the last line Next returned lies in the input: its
// offset and length, its line end and the blanks around it included (the
// line is those bytes, trimmed), so it can be read again in place.
func (l *LineReader) Span() (off int64, n int) { return l.from, int(l.to - l.from) }

// Skip counts one skipped record of an unknown type (or attribute).
func (r *Report) Skip(kind string) {
	if r.Skipped == nil {
		r.Skipped = map[string]int{}
	}
	r.Skipped[kind]++
}

// Problem records a malformed line or record. Under opt.Strict it returns
// the error the import must fail with ("FILE:LINE: what"); otherwise nil.
func (r *Report) Problem(opt Options, file string, line int, err error) error {
	r.Problems = append(r.Problems, Problem{File: file, Line: line, Err: err.Error()})
	if opt.Strict {
		return fmt.Errorf("%s:%d: %v", file, line, err)
	}
	return nil
}
