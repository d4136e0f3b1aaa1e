package termtable

import (
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// columnStarts is the screen column at which each of the cells of line
// starts, the cells told apart by runs of two or more spaces.
func columnStarts(line string) []int {
	var starts []int
	col, spaces := 0, 2
	for _, r := range line {
		if r == ' ' {
			spaces++
		} else {
			if spaces >= 2 {
				starts = append(starts, col)
			}
			spaces = 0
		}
		col += runewidth.RuneWidth(r)
	}
	return starts
}

func TestTable_AlignsByScreenWidth(t *testing.T) {
	tab := New("AGENT", "STATUS", "TASK")
	tab.Row("研究员", "ok", "比较第三季度收入")
	tab.Row("🚀-launcher", "error", "ascii task")
	tab.Row("analyst", "ok", "Ünïcödé")
	var b strings.Builder
	if err := tab.Fprint(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := columnStarts(lines[0])
	for _, l := range lines[1:] {
		if got := columnStarts(l); len(got) != len(want) || got[1] != want[1] || got[2] != want[2] {
			t.Errorf("line %q starts its cells at columns %v; the header's at %v\n%s", l, got, want, b.String())
		}
		if strings.HasSuffix(l, " ") {
			t.Errorf("line %q ends in spaces", l)
		}
	}
	// 研究员 is 6 columns, 🚀-launcher 11: STATUS starts at 11+Gap.
	if want[1] != 11+Gap {
		t.Errorf("STATUS starts at column %d, want %d:\n%s", want[1], 11+Gap, b.String())
	}
}

func TestTable_SanitizesAndJoinsLines(t *testing.T) {
	tab := New("A", "B")
	tab.Row("x\x1b[2Jy", "two\nlines")
	var b strings.Builder
	tab.Fprint(&b)
	if strings.ContainsRune(b.String(), 0x1b) || !strings.Contains(b.String(), `x\x1b[2Jy  two lines`) {
		t.Errorf("cells not sanitized or not one line: %q", b.String())
	}
}

func TestTruncate_Columns(t *testing.T) {
	for _, c := range []struct {
		in   string
		cols int
		want string
	}{
		{"short", 10, "short"},
		{"比较第三季度收入", 16, "比较第三季度收入"},
		{"比较第三季度收入", 9, "比较第三…"},  // 4 wide characters and the ellipsis: 9 columns
		{"比较第三季度收入", 10, "比较第三…"}, // never half a wide character
		{"🚀🚀🚀🚀", 5, "🚀🚀…"},
		{"a  b\nc", 10, "a b c"},
		{"abcdefghij", 5, "abcd…"},
	} {
		got := Truncate(c.in, c.cols)
		if got != c.want || Width(got) > c.cols {
			t.Errorf("Truncate(%q, %d) = %q (%d columns), want %q", c.in, c.cols, got, Width(got), c.want)
		}
	}
}
