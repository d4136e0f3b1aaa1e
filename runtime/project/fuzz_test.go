package project

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds agents.yaml texts to the loader: it never panics or hangs,
// and it either loads a project with at least one agent or returns a
// *LoadError. The seeds are every agents.yaml of the fixtures and
// examples. Run it with: go test ./runtime/project -fuzz FuzzLoad
func FuzzLoad(f *testing.F) {
	for _, glob := range []string{"../../fixtures/*/agents.yaml", "../examples/*/agents.yaml", "../testdata/*/agents.yaml"} {
		files, _ := filepath.Glob(glob)
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(string(b))
			}
		}
	}
	f.Add("agents:\n  - name: a\n    description: A.\n    fork: {agents: [a], maxBranches: 0}\ntools:\n  - name: s\n    command: [sh]\n    maxResult: 64KiB\n    env: [X_KEY]\n")
	f.Add("agents: [[[]]]\nmodel: {a: b}\n")
	dir := f.TempDir()
	os.MkdirAll(filepath.Join(dir, "agents"), 0o755)
	os.MkdirAll(filepath.Join(dir, "workspace"), 0o755)
	os.WriteFile(filepath.Join(dir, "agents", "a.md"), []byte("You are a."), 0o644)
	os.WriteFile(filepath.Join(dir, ForkInstructionsFile), []byte("Fork."), 0o644)
	f.Fuzz(func(t *testing.T, yaml string) {
		if err := os.WriteFile(filepath.Join(dir, AgentsFile), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(dir)
		if err != nil {
			if _, ok := err.(*LoadError); !ok {
				t.Fatalf("Load: %T %v, want a *LoadError", err, err)
			}
			return
		}
		if len(p.Agents) == 0 {
			t.Fatalf("Load accepted a project without agents:\n%s", yaml)
		}
	})
}
