package findings_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
)

// TestDocs_InStep checks docs/audit.md carries the rules table and grade
// scale generated from the rules' Doc (one source for every doc); -update
// rewrites the marked sections.
func TestDocs_InStep(t *testing.T) {
	path := filepath.Join("..", "docs", "audit.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	if err := report.WriteRulesMarkdown(&table, rules.All, nil); err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{"rules": table.String(), "grades": findings.GradeScale + "\n"}
	doc := string(raw)
	for _, name := range []string{"rules", "grades"} {
		begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s lacks the %s markers", path, name)
		}
		got := doc[i+len(begin) : j]
		if got != sections[name] {
			if !*update {
				t.Errorf("the %s section of %s is out of step with the rules (run go test ./findings -update)", name, path)
			}
			doc = doc[:i+len(begin)] + sections[name] + doc[j:]
		}
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
