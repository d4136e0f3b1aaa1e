// Package golden compares rendered output with files under a test
// package's testdata/ folder, and rewrites them when the package's -update
// flag is set. Each test package keeps its own flag (go/printer's habit);
// this package keeps one comparison and one diff for all of them.
package golden

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pmezard/go-difflib/difflib"
)

// Check compares got with testdata/name. With update it writes got there
// (creating folders) instead. A mismatch fails t with a unified diff and
// says how to rewrite the file.
func Check(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run the package's tests with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (rerun with -update if the change is intended, and review it):\n%s", path, Diff(want, got))
	}
}

// Diff is a unified diff from want to got, with three lines of context.
func Diff(want, got []byte) string {
	d, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(want)), B: difflib.SplitLines(string(got)),
		FromFile: "golden", ToFile: "got", Context: 3,
	})
	if err != nil || d == "" {
		return "(the bytes differ but the lines do not: line endings or a final newline?)"
	}
	return d
}
