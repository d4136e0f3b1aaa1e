package timeline_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDeps: timeline lays out a chart and knows nothing of what annotates
// its labels — `go list -deps` of the package contains neither the prompt-
// cache analysis (cache, cache/report), nor prices (money), nor the request
// reader (chat), nor the drawings (mermaid), nor SQL.
func TestDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	const mod = "github.com/inspect-dev/inspect/"
	out, err := exec.Command("go", "list", "-deps", mod+"timeline").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps timeline: %v\n%s", err, out)
	}
	banned := map[string]bool{}
	for _, p := range []string{"cache", "cache/report", "money", "chat", "mermaid"} {
		banned[mod+p] = true
	}
	deps := strings.Fields(string(out))
	for _, dep := range deps {
		if banned[dep] || dep == "database/sql" || strings.Contains(dep, "sqlite") {
			t.Errorf("timeline links %s", dep)
		}
	}
	if !contains(deps, mod+"chart") {
		t.Errorf("timeline does not link chart; the deps read were:\n%s", out)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
