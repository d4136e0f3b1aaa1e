package record_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The layers above the store read records, never SQL: DESIGN §2 says the
// dependencies of graph, mermaid, findings and diff (and of the packages that
// join them later) contain neither database/sql nor a SQLite driver, and
// record imports nothing of ours. The store's request layout (store/layout,
// what cache reads) links no SQL either, and names only records; so do
// the stacks' profiles (stack). The analysis layer every front end calls
// links no SQL: analysis/storesrc alone adapts the store to it.
func TestImportGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	const mod = "github.com/inspect-dev/inspect/"
	noSQL := []string{"graph", "chart", "graphjson", "mermaid", "findings", "findings/rules", "findings/report", "diff", "chat", "snapshot", "cache", "web", "timeline", "money", "config", "store/layout", "mcpserver", "analysis", "stack"}
	for _, pkg := range append([]string{"record"}, noSQL...) {
		if _, err := os.Stat("../" + pkg); err != nil {
			continue // not written yet
		}
		out, err := exec.Command("go", "list", "-deps", mod+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			switch {
			case dep == "database/sql" || strings.Contains(dep, "sqlite"):
				t.Errorf("%s depends on %s: it must read records, not the database", pkg, dep)
			case pkg == "record" && strings.HasPrefix(dep, mod) && dep != mod+"record":
				t.Errorf("record imports %s: the vocabulary imports nothing of ours", dep)
			case pkg == "stack" && strings.HasPrefix(dep, mod) && dep != mod+"record" && dep != mod+pkg:
				t.Errorf("stack imports %s: the stacks' terms are vocabulary, naming records and nothing else of ours", dep)
			case pkg == "store/layout" && strings.HasPrefix(dep, mod) && dep != mod+"record" && dep != mod+pkg:
				t.Errorf("store/layout imports %s: the request layout names records and nothing else of ours", dep)
			}
		}
	}
}
