package record

import (
	"strings"
	"testing"
)

// TestBranchPath: a branch's path is its parent's, a slash and its name,
// until that would pass MaxBranchPath; then the fork that opened it stands
// for its ancestors, so a path stays bounded (and unique: siblings' names
// differ, forks' seqs differ) however deep the forks nest.
func TestBranchPath(t *testing.T) {
	if got := BranchPath("", 3, "eu"); got != "eu" {
		t.Errorf(`BranchPath("", 3, "eu") = %q, want "eu"`, got)
	}
	if got := BranchPath("eu", 7, "fr"); got != "eu/fr" {
		t.Errorf(`BranchPath("eu", 7, "fr") = %q, want "eu/fr"`, got)
	}
	long := strings.Repeat("deep/", MaxBranchPath/5)
	long = long[:len(long)-1]
	if got := BranchPath(long, 42, "leaf"); got != "…n42/leaf" {
		t.Errorf("BranchPath(%d bytes, 42, leaf) = %q, want …n42/leaf", len(long), got)
	}
	// down a chain of 10,000 levels no path passes the bound
	path, longest := "", 0
	seen := map[string]bool{}
	for i := int64(1); i <= 10_000; i++ {
		path = BranchPath(path, i, "deep")
		longest = max(longest, len(path))
		if seen[path] {
			t.Fatalf("level %d: path %q repeats an ancestor's", i, path)
		}
		seen[path] = true
	}
	if longest > MaxBranchPath+len("…n10000/deep") {
		t.Errorf("the longest path of a 10,000-level chain is %d bytes, want at most about %d", longest, MaxBranchPath)
	}
}
