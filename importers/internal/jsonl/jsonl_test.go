package jsonl

import (
	"strings"
	"testing"
)

type got struct {
	line    int
	text    string
	tooLong bool
	partial bool
}

func scanAll(t *testing.T, in string, max int) []got {
	t.Helper()
	s := NewSize(strings.NewReader(in), max)
	var out []got
	for s.Scan() {
		out = append(out, got{s.Line(), string(s.Bytes()), s.TooLong(), s.Partial()})
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}
	return out
}

func TestScanner(t *testing.T) {
	for _, c := range []struct {
		name string
		in   string
		max  int
		want []got
	}{
		{"empty", "", 10, nil},
		{"blank lines skipped, numbers kept", "a\n\n  \nb\r\n", 10, []got{{1, "a", false, false}, {4, "b", false, false}}},
		{"last line without newline is partial", "a\nbc", 10, []got{{1, "a", false, false}, {2, "bc", false, true}}},
		{"too long line skipped", "0123456789ABC\nok\n", 10, []got{{1, "", true, false}, {2, "ok", false, false}}},
		{"exactly max fits", "0123456789\n", 10, []got{{1, "0123456789", false, false}}},
		{"too long last line", "x\n0123456789ABC", 10, []got{{1, "x", false, false}, {2, "", true, true}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := scanAll(t, c.in, c.max)
			if len(out) != len(c.want) {
				t.Fatalf("got %+v, want %+v", out, c.want)
			}
			for i := range out {
				if out[i] != c.want[i] {
					t.Errorf("line %d: got %+v, want %+v", i, out[i], c.want[i])
				}
			}
		})
	}
}

// TestScanner_LongerThanBuffer reads lines longer than the reader's buffer
// (64 KiB) whole.
func TestScanner_LongerThanBuffer(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	out := scanAll(t, long+"\n"+long, 1<<20)
	if len(out) != 2 || out[0].text != long || out[1].text != long || !out[1].partial {
		t.Fatalf("got %d lines (partial=%v)", len(out), len(out) == 2 && out[1].partial)
	}
}
