package importers

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMessageText(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`"hi"`, "hi"},
		{`[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"},{"text":"b"}]`, "ab"},
		{`{"text":"x"}`, ""},
		{``, ""},
	} {
		if got := MessageText(json.RawMessage(tt.in)); got != tt.want {
			t.Errorf("MessageText(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("abcdef", 3); got != "abc…" {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("aé", 2); got != "a…" { // é is 2 bytes: no half rune
		t.Errorf("Truncate = %q", got)
	}
}

func TestHead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	if got := string(Head(p, 4)); got != "0123" {
		t.Errorf("Head = %q", got)
	}
	if got := string(Head(p, 40)); got != "0123456789" {
		t.Errorf("Head = %q", got)
	}
	if Head(filepath.Join(t.TempDir(), "none"), 4) != nil {
		t.Error("Head of a missing file is not nil")
	}
}

// TestFirstLine: the first line, cut to 300 bytes on a rune boundary.
func TestFirstLine(t *testing.T) {
	if got := FirstLine("boom\nstack"); got != "boom" {
		t.Errorf("FirstLine = %q", got)
	}
	long := strings.Repeat("a", 299) + "é and more"
	if got := FirstLine(long); got != strings.Repeat("a", 299)+"…" {
		t.Errorf("FirstLine of a long line = %q: a rune cut in half", got)
	}
}
