// Package termtable lays out text tables for a terminal by screen width, not
// by characters: a CJK character or an emoji takes two columns, a combining
// mark none (github.com/mattn/go-runewidth, which follows the terminal's
// locale for East Asian ambiguous characters). Cells are sanitized with
// termsafe first, so the width measured is the width shown.
package termtable

import (
	"io"
	"strings"

	"github.com/mattn/go-runewidth"

	"github.com/inspect-dev/inspect/internal/termsafe"
)

// Gap is the number of spaces between two columns.
const Gap = 2

// Table is a table of text cells, the first row its header. Every column
// but the last is padded to its widest cell; the last is not padded, so a
// line never ends in spaces.
type Table struct {
	rows [][]string
}

// New returns a table whose first row is header.
func New(header ...string) *Table {
	t := &Table{}
	t.Row(header...)
	return t
}

// Row adds a row. A cell is made one line (its runs of white space, newlines
// included, become one space) and sanitized.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = termsafe.String(oneLine(c))
	}
	t.rows = append(t.rows, row)
}

// Fprint writes the table to w and returns the first write error.
func (t *Table) Fprint(w io.Writer) error {
	var widths []int
	for _, row := range t.rows {
		for i, c := range row {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], Width(c))
		}
	}
	var b strings.Builder
	for _, row := range t.rows {
		for i, c := range row {
			b.WriteString(c)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-Width(c)+Gap))
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Width is the number of terminal columns s takes.
func Width(s string) int { return runewidth.StringWidth(s) }

// Truncate makes s one line and shortens it to at most cols columns, its
// last column an ellipsis when something was cut. A wide character is never
// split.
func Truncate(s string, cols int) string {
	s = oneLine(s)
	if Width(s) <= cols {
		return s
	}
	return runewidth.Truncate(s, cols, "…")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
