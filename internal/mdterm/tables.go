package mdterm

import (
	"regexp"
	"strings"

	"github.com/mattn/go-runewidth"
)

// tableFits reports whether glamour draws a table whose columns are
// widths wide whole on a line width columns wide: beside its cells' text
// a table takes the document margin, a space either side of each cell
// and a rule between two (measured with glamour 1.0: a table whose
// cells' widths sum to width - 3×columns - 2 is drawn whole in every
// style at 60, 80 and 120 columns, one column wider has a cell cut; one
// more column of slack here for a table of one column).
func tableFits(widths []int, width int) bool {
	sum := 0
	for _, w := range widths {
		sum += w
	}
	return sum+3*len(widths)+3 <= width
}

// delimiterRow is a table's delimiter row: | --- | :---: | ---: |
var delimiterRow = regexp.MustCompile(`^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$`)

// fitTables writes each table of md that glamour cannot draw whole on a
// terminal width columns wide as a list, one item per row: its first
// cell in bold, then each other cell after its column's header, "h: c",
// separated by semicolons. Glamour shrinks a table's columns to the width
// and cuts its cells wherever the column ends, inside words
// ("warnin|g", "researche|r", "sever…"); a list item wraps between
// words. A table that fits, and anything in a fenced code block, is left
// as it is.
func fitTables(md string, width int) string {
	if !strings.Contains(md, "|") {
		return md
	}
	var lines []string
	var fenced []bool
	eachLine(md, func(line string, f bool) {
		lines = append(lines, line)
		fenced = append(fenced, f)
	})
	var b strings.Builder
	b.Grow(len(md))
	for i := 0; i < len(lines); i++ {
		if fenced[i] || i+1 >= len(lines) || fenced[i+1] || !strings.Contains(lines[i], "|") || !delimiterRow.MatchString(strings.TrimRight(lines[i+1], "\n")) {
			b.WriteString(lines[i])
			continue
		}
		head := cells(lines[i])
		if len(head) != len(cells(lines[i+1])) {
			b.WriteString(lines[i])
			continue
		}
		end := i + 2
		for end < len(lines) && !fenced[end] && strings.TrimSpace(lines[end]) != "" && strings.Contains(lines[end], "|") {
			end++
		}
		var rows [][]string
		for _, l := range lines[i+2 : end] {
			rows = append(rows, cells(l))
		}
		if tableFits(columnWidths(head, rows), width) {
			for _, l := range lines[i:end] {
				b.WriteString(l)
			}
		} else {
			writeList(&b, head, rows)
		}
		i = end - 1
	}
	return b.String()
}

// cells splits a table row into its cells at the pipes not escaped, each
// trimmed (GitHub's rule: a pipe in a cell, in a code span too, is \|).
func cells(line string) []string {
	s := strings.TrimSpace(line)
	s = strings.TrimPrefix(s, "|")
	if strings.HasSuffix(s, "|") && !strings.HasSuffix(s, `\|`) {
		s = s[:len(s)-1]
	}
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '|':
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// columnWidths are the screen widths of the table's columns: the widest
// cell of each, its escaped pipes as one column.
func columnWidths(head []string, rows [][]string) []int {
	w := make([]int, len(head))
	for _, row := range append([][]string{head}, rows...) {
		for c := range min(len(row), len(w)) {
			w[c] = max(w[c], runewidth.StringWidth(strings.ReplaceAll(row[c], `\|`, "|")))
		}
	}
	return w
}

// writeList writes a table's rows as a list: "- **first** — h2: c2; h3: c3".
// A row has the header's columns (GitHub's rule: more are dropped, fewer
// are empty); an empty cell is left out.
func writeList(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("\n")
	for _, row := range rows {
		row = append(row, make([]string, max(len(head)-len(row), 0))...)[:len(head)]
		var rest []string
		for c := 1; c < len(head); c++ {
			switch {
			case row[c] == "":
			case head[c] == "":
				rest = append(rest, row[c])
			default:
				rest = append(rest, head[c]+": "+row[c])
			}
		}
		b.WriteString("- ")
		if row[0] != "" {
			b.WriteString("**" + row[0] + "**")
			if len(rest) > 0 {
				b.WriteString(" — ")
			}
		}
		b.WriteString(strings.Join(rest, "; "))
		b.WriteString("\n")
	}
	b.WriteString("\n")
}
