package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes; commands never
// touch os.Stdout directly, so tests give them buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// OutTTY reports whether Out is a terminal (glamour, colour, width).
	OutTTY bool
	// ErrTTY reports whether ErrOut is a terminal (progress lines).
	ErrTTY bool
	// NoColor is set by NO_COLOR or a non-terminal stdout.
	NoColor bool
	// Width is the terminal width capped at 120, else 80.
	Width int
}

// SystemStreams wires the process's streams.
func SystemStreams(in io.Reader, out, errOut io.Writer) *IOStreams {
	s := &IOStreams{In: in, Out: out, ErrOut: errOut, Width: 80}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.OutTTY = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			s.Width = min(w, 120)
		}
	}
	if f, ok := errOut.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		s.ErrTTY = true
	}
	_, noColor := os.LookupEnv("NO_COLOR")
	s.NoColor = noColor || !s.OutTTY
	return s
}

// Styled reports whether output may use glamour and colour.
func (s *IOStreams) Styled() bool { return s.OutTTY && !s.NoColor }
