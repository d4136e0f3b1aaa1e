package main

import (
	"context"
	"encoding/json"
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

	// and it shows good topology: its own audit finds nothing, even at
	// --fail-on warning (issue 12, item 15: it used to give
	// handoff.for-answer; the demo is where mistakes are shown)
	db := f.DBPath
	f, out, errOut = testFactory(t)
	f.DBPath = db
	if code := run(context.Background(), f, []string{"audit", "--format", "json", "--fail-on", "warning"}); code != ExitOK {
		t.Errorf("audit of the init project: exit %d, want 0\n%s%s", code, out, errOut)
	}
	var rep struct {
		Findings []struct{ Rule string } `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Findings) != 0 {
		t.Errorf("audit of the init project = %+v (%v), want no findings", rep.Findings, err)
	}

	// never overwrites
	f, _, errOut = testFactory(t)
	if code := run(context.Background(), f, []string{"init", dir}); code != ExitUsage || !strings.Contains(errOut.String(), "already exists") {
		t.Errorf("second init: exit %d, stderr %q; want 2 and already exists", code, errOut)
	}
}
