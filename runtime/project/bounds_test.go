package project

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoad_ToolBounds: a command tool's maxResult (bytes or KiB/MiB) and
// env: list of the secret-looking variables it may see (issue 11, defects
// 4 and 5); a bad maxResult is a load error on its line.
func TestLoad_ToolBounds(t *testing.T) {
	tools := "tools:\n  - name: s\n    description: S.\n    command: [sh]\n    maxResult: %s\n    env: [SEARCH_API_KEY]\n"
	yaml := "agents:\n  - name: a\n    description: A.\n    tools: [s]\n"
	for in, want := range map[string]int{"65536": 65536, "64KiB": 64 << 10, "2MiB": 2 << 20, "8K": 8 << 10} {
		dir := writeProject(t, yaml+strings.Replace(tools, "%s", in, 1), []string{"a"}, false)
		os.MkdirAll(filepath.Join(dir, "workspace"), 0o755)
		p, err := Load(dir)
		if err != nil {
			t.Fatalf("maxResult %s: %v", in, err)
		}
		ct := p.CommandTool("s")
		if ct.MaxResult != want || len(ct.Env) != 1 || ct.Env[0] != "SEARCH_API_KEY" {
			t.Errorf("maxResult %s: %+v, want %d and env [SEARCH_API_KEY]", in, ct, want)
		}
	}
	for _, bad := range []string{"0", "-5", "lots", "1GiB"} {
		dir := writeProject(t, yaml+strings.Replace(tools, "%s", bad, 1), []string{"a"}, false)
		_, err := Load(dir)
		var le *LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), "agents.yaml:9") || !strings.Contains(err.Error(), "maxResult must be a size") {
			t.Errorf("maxResult %s: %v, want a load error on line 9", bad, err)
		}
	}
}
