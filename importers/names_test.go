package importers

import (
	"reflect"
	"testing"
)

// TestBranchNames: a name given before comes back numbered from 2, the
// first number free, a numbered name given by the source included.
func TestBranchNames(t *testing.T) {
	names := BranchNames{}
	var got []string
	for _, n := range []string{"a", "a", "a-2", "b", "a", "", ""} {
		got = append(got, names.Unique(n))
	}
	if want := []string{"a", "a-2", "a-2-2", "b", "a-3", "", "-2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
}

// TestClip: a text over the cap keeps its head, cut on a rune boundary,
// and says how many bytes were left out; the cap is Options.MaxText, else
// DefaultMaxText.
func TestClip(t *testing.T) {
	opt := Options{MaxText: 5}
	if got := opt.Clip("abcde"); got != "abcde" {
		t.Errorf("at the cap: %q", got)
	}
	if got := opt.Clip("abcdéfgh"); got != "abcd…\n[5 more bytes not imported]" { // 9 bytes, é is 2: no half rune, 4 kept
		t.Errorf("over the cap: %q", got)
	}
	if (Options{}).TextCap() != DefaultMaxText || DefaultMaxText != 256<<10 {
		t.Errorf("default cap %d", (Options{}).TextCap())
	}
}
