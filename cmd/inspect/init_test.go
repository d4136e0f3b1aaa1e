package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInitRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "myproject")
	f, out, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"init", dir}); code != ExitOK {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	for _, p := range []string{"agents.yaml", "agents/analyst.md", "agents/fork-instructions.md", "script.yaml", "workspace/regions/eu.md"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("init did not write %s", p)
		}
	}
	if !strings.Contains(out.String(), "inspect run "+dir+" --script") {
		t.Errorf("stdout lacks the next step: %q", out)
	}

	// the project it wrote is valid (no warnings) and runs with its script
	f, out, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"run", dir, "--check"}); code != ExitOK || !strings.Contains(out.String(), "0 warning(s)") {
		t.Errorf("check: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	f, out, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml")}); code != ExitOK {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if !strings.Contains(out.String(), "brief.md") || !strings.Contains(errOut.String(), "hands off to writer") {
		t.Errorf("run output: %q / %q", out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "workspace", "brief.md")); err != nil || !strings.Contains(string(b), "6.1M") {
		t.Errorf("the writer's brief.md = %q, %v", b, err)
	}

	// never overwrites
	f, _, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"init", dir}); code != ExitUsage || !strings.Contains(errOut.String(), "already exists") {
		t.Errorf("second init: exit %d, stderr %q; want 2 and already exists", code, errOut)
	}
}
