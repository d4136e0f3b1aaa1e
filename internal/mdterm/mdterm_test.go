package mdterm

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/charmbracelet/glamour"
	"github.com/mattn/go-runewidth"
)

// TestBreakLongWords: a word longer than the line is broken into pieces
// of a line each, its characters kept in order; shorter words, lines in
// fenced code blocks and Markdown without a long word are left as they
// are.
func TestBreakLongWords(t *testing.T) {
	long := strings.Repeat("ab", 130)
	md := "# title " + long + "\n\n- item " + long + " end\n\n```\n" + long + "\n```\n\nplain é " + strings.Repeat("é", 45) + "\n"
	got := breakLongWords(md, 100, 100)
	lines := strings.Split(got, "\n")
	if lines[5] != long {
		t.Errorf("a fenced line was changed: %q", lines[5])
	}
	for _, l := range []string{lines[0], lines[2], lines[8]} {
		for _, w := range strings.Fields(l) {
			if utf8.RuneCountInString(w) > 100 {
				t.Errorf("a word of %d runes left in %q", utf8.RuneCountInString(w), l)
			}
		}
	}
	if strings.ReplaceAll(strings.TrimPrefix(lines[0], "# title "), " ", "") != long {
		t.Errorf("the heading's word lost characters: %q", lines[0])
	}
	if lines[8] != "plain é "+strings.Repeat("é", 45) {
		t.Errorf("a short word was broken: %q", lines[8])
	}
	if short := "# a b\n\nno long words here\n"; breakLongWords(short, 100, 100) != short {
		t.Error("Markdown without a long word changed")
	}
}

// BenchmarkInput_LongWord is glamour rendering a heading and a
// paragraph holding a word of 100,000 characters, as show does, with and
// without Input's breaks.
func BenchmarkInput_LongWord(b *testing.B) {
	md := "# n3\n\n### Branch job (agent " + strings.Repeat("x", 100000) + ")\n\nsome " + strings.Repeat("y", 100000) + " text\n"
	r, err := glamour.NewTermRenderer(glamour.WithStylePath("dark"), glamour.WithWordWrap(100))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("broken", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := r.Render(Input(md, 100)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole-10k", func(b *testing.B) { // the word whole, a tenth as long: the square shows
		small := "# n3\n\nsome " + strings.Repeat("y", 10000) + " text\n"
		for i := 0; i < b.N; i++ {
			if _, err := r.Render(small); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// tables are Markdown tables as inspect's reports write them: the audit's
// rules examined and its findings, a diff's per-agent figures (ten
// columns), the grades (three short ones, which fit).
const tables = "## What each rule examined\n\n| rule | status | detail |\n| --- | --- | --- |\n" +
	"| `fanout.missed` | found | 3 serial read_file calls in the trunk of analyst; none used an earlier one's result |\n" +
	"| `fork.one-branch` | clear | no fork of one branch: researcher's lone sub-agent was asked for |\n" +
	"| `handoff.for-answer` | found | analyst handed to writer at n22 for one call it could make itself |\n\n" +
	"## Per agent\n\n| agent | tokens in | tokens out | tokens cached | elapsed | model calls | tool calls | forks | branches | hand-offs |\n" +
	"| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n" +
	"| analyst (gone) | 0 (-7693) | 0 (-277) | 0 (-5870) | 0ms (-6.7s) | 0 (-5) | 0 (-3) | 0 (-1) | 0 (-2) | 0 (-1) |\n" +
	"| researcher-with-a-long-name | 2506 (+2506) | 145 (+145) | - | 2.0s (+2.0s) | 2 (+2) | 0 (±0) | 1 (+1) | 2 (+2) | 0 (±0) |\n\n" +
	"## Grades\n\n| area | grade | score |\n| --- | --- | --- |\n| Forking | D | 55 |\n| Caching | A | 96 |\n"

// TestRender_TablesKeepWords: at 60 and 80 columns, every word of every
// cell of inspect's tables is on one line of glamour's output, whole, and
// no line is wider than the terminal: a table too wide is written as a
// list, one item per row, each cell after its column's header (before:
// glamour cut its cells where their columns ended, "warnin\ng",
// "researche\nr", "sever…", "fork.one-\nbranch"). The grades table, which
// fits, is still drawn as a table.
func TestRender_TablesKeepWords(t *testing.T) {
	var words []string
	for _, line := range strings.Split(tables, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| ---") {
			continue
		}
		for _, c := range cells(line) {
			for _, w := range strings.Fields(strings.Trim(c, "`")) {
				words = append(words, w)
			}
		}
	}
	for _, width := range []int{60, 80} {
		r, err := New("dark", width)
		if err != nil {
			t.Fatal(err)
		}
		out, err := Render(r, tables, width)
		if err != nil {
			t.Fatal(err)
		}
		text := sgr.ReplaceAllString(out, "")
		lines := strings.Split(text, "\n")
		for _, w := range words {
			found := false
			for _, l := range lines {
				if containsWord(l, w) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("at %d columns the cell word %q is not whole on any line:\n%s", width, w, text)
			}
		}
		for i, l := range lines {
			if sw := runewidth.StringWidth(l); sw > width {
				t.Errorf("at %d columns line %d is %d wide: %q", width, i+1, sw, l)
			}
		}
		if strings.Contains(text, "…") {
			t.Errorf("at %d columns a cell was cut with an ellipsis:\n%s", width, text)
		}
		if !strings.Contains(text, "status: found") || !strings.Contains(text, "tokens in: 0 (-7693)") {
			t.Errorf("at %d columns the wide tables are not lists of header: cell:\n%s", width, text)
		}
		if !regexp.MustCompile(`Forking\s+[│|]\s+D\s+[│|]\s+55`).MatchString(text) {
			t.Errorf("at %d columns the grades table, which fits, is no longer a table:\n%s", width, text)
		}
	}
}

// containsWord reports whether w is in line with no letter or digit
// glued to either side.
func containsWord(line, w string) bool {
	for i := 0; ; {
		j := strings.Index(line[i:], w)
		if j < 0 {
			return false
		}
		j += i
		before, _ := utf8.DecodeLastRuneInString(line[:j])
		after, _ := utf8.DecodeRuneInString(line[j+len(w):])
		if !isWordRune(before) && !isWordRune(after) {
			return true
		}
		i = j + 1
	}
}

// TestFitTables: a table that fits is left as it is, byte for byte; one
// in a fenced block too; a wide one becomes a list of its rows, escaped
// pipes kept, empty cells left out, a short row padded.
func TestFitTables(t *testing.T) {
	fits := "| a | b |\n| --- | --- |\n| 1 | 2 |\n"
	if got := fitTables(fits, 60); got != fits {
		t.Errorf("a table that fits changed:\n%s", got)
	}
	wide := "| name | what |\n| --- | --- |\n| x | " + strings.Repeat("word ", 12) + "a\\|b |\n| y | |\n| z |\n"
	fenced := "```\n" + wide + "```\n"
	if got := fitTables(fenced, 40); got != fenced {
		t.Errorf("a fenced table changed:\n%s", got)
	}
	got := fitTables("intro\n\n"+wide+"after\n", 40)
	want := "intro\n\n\n- **x** — what: " + strings.Repeat("word ", 12) + "a\\|b\n- **y**\n- **z**\n\nafter\n"
	if got != want {
		t.Errorf("the wide table as a list:\n%q\nwant\n%q", got, want)
	}
}
