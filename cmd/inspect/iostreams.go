package main

import (
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/inspect-dev/inspect/internal/termsafe"
)

// IOStreams are the streams a command reads and writes; commands never
// touch os.Stdout directly, so tests give them buffers.
//
// Out and ErrOut are for people: once NewFactory has taken the streams,
// everything written to them passes the terminal sanitizer (termsafe), so
// untrusted text never reaches a terminal raw (DESIGN §11). Raw is stdout
// as it is, for what must keep its bytes: JSON, SARIF, JUnit, images,
// request bodies, and glamour's styled output (whose input is sanitized).
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Raw is stdout without sanitizing (set by NewFactory).
	Raw io.Writer
	// data is stdout through the sanitizer's JSON form (set by
	// NewFactory): what Data gives on a terminal.
	data io.Writer

	// OutTTY reports whether Out is a terminal (glamour, colour, width).
	OutTTY bool
	// ErrTTY reports whether ErrOut is a terminal (progress lines).
	ErrTTY bool
	// NoColor is set by a non-empty NO_COLOR or a non-terminal stdout.
	NoColor bool
	// Width is the terminal width capped at 120, else 80.
	Width int
}

// SystemStreams wires the process's streams; getenv reads NO_COLOR
// (os.Getenv in the binary).
func SystemStreams(in io.Reader, out, errOut io.Writer, getenv func(string) string) *IOStreams {
	s := &IOStreams{In: in, Out: out, ErrOut: errOut, Width: 80}
	if f, ok := out.(*os.File); ok && isTerminal(int(f.Fd())) {
		s.OutTTY = true
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			s.Width = min(w, 120)
		}
	}
	if f, ok := errOut.(*os.File); ok && isTerminal(int(f.Fd())) {
		s.ErrTTY = true
	}
	s.NoColor = noColorEnv(getenv) || !s.OutTTY
	return s
}

// noColorEnv reports whether the environment asks for no colour. Per
// no-color.org only a non-empty NO_COLOR does: NO_COLOR= (set but empty)
// leaves colour on.
func noColorEnv(getenv func(string) string) bool {
	return getenv("NO_COLOR") != ""
}

// isTerminal reports whether fd is a terminal; tests replace it.
var isTerminal = term.IsTerminal

// Styled reports whether output may use glamour and colour.
func (s *IOStreams) Styled() bool { return s.OutTTY && !s.NoColor }

// markdownStyle is the glamour style Markdown output (audit, show, ask's
// answer) is rendered in, and whether it is rendered at all: on a terminal
// it is wrapped to Width — in the style GLAMOUR_STYLE names, or without
// colour (glamour's notty style) when NO_COLOR is set; to a pipe or a file
// it is not rendered. GLAMOUR_STYLE unset or "auto" is dark or light as
// the environment says (backgroundStyle), never glamour's auto style:
// that one asks the terminal its background colour (ESC ] 11 ; ?, then
// ESC [ 6 n) and waits 5 seconds for an answer tmux, CI's ptys and Emacs
// never give.
func (s *IOStreams) markdownStyle(getenv func(string) string) (string, bool) {
	switch style := getenv("GLAMOUR_STYLE"); {
	case !s.OutTTY:
		return "", false
	case s.NoColor:
		return "notty", true
	case style != "" && style != "auto":
		return style, true
	}
	return backgroundStyle(getenv("COLORFGBG")), true
}

// backgroundStyle is glamour's style for the background COLORFGBG
// ("foreground;background" colour numbers, as rxvt, Konsole and others
// set it) says: light for a light background (7, or 9 to 15), dark
// otherwise and when it is unset — the common terminal.
func backgroundStyle(colorfgbg string) string {
	parts := strings.Split(colorfgbg, ";")
	if bg, err := strconv.Atoi(parts[len(parts)-1]); err == nil && (bg == 7 || bg >= 9 && bg <= 15) {
		return "light"
	}
	return "dark"
}

// Data is where a data format (JSON, SARIF, JUnit, a request body, the
// MCP server's messages) is written: stdout's bytes as they are when
// piped, so they parse and hash as written; through the sanitizer's JSON
// form on a terminal, where a person reads them (DEL, a C1 or a bidi
// control becomes a JSON escape, \u007f, \u009b, \u202e: still valid
// JSON of the same value).
func (s *IOStreams) Data() io.Writer {
	if !s.OutTTY {
		return s.Raw
	}
	if s.data == nil { // streams NewFactory did not take
		s.data = termsafe.NewJSONWriter(s.Out)
	}
	return s.data
}

// sanitize puts the terminal sanitizer in front of Out and ErrOut, once,
// and keeps stdout as it is in Raw. It returns the sanitizers, to flush.
func (s *IOStreams) sanitize() []*termsafe.Writer {
	if s.Raw != nil {
		return nil
	}
	s.Raw = s.Out
	out, errOut, data := termsafe.NewWriter(s.Out), termsafe.NewWriter(s.ErrOut), termsafe.NewJSONWriter(s.Out)
	s.Out, s.ErrOut, s.data = out, errOut, data
	return []*termsafe.Writer{out, errOut, data}
}
