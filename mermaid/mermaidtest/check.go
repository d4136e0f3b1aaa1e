// Package mermaidtest checks Mermaid text with the real Mermaid parser
// (../shared/tools/mermaid/check) from tests.
package mermaidtest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// CheckerPath finds shared/tools/mermaid/check by walking up from the
// package directory to the folder that holds shared/ (the repository's
// parent in CI and in the team's checkout). It returns "" when absent.
func CheckerPath(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "tools", "mermaid", "check")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// SkipOrFail skips with why, or fails when INSPECT_REQUIRE_MERMAID is set
// (CI sets it: there the Mermaid tests must not skip).
func SkipOrFail(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("INSPECT_REQUIRE_MERMAID") != "" {
		t.Fatalf("%s (INSPECT_REQUIRE_MERMAID is set)", why)
	}
	t.Skip(why)
}

// Check parses every file (name → Mermaid text) with the real
// Mermaid parser in one invocation of the checker (it costs about 1.5 s per
// call, any number of files).
func Check(t testing.TB, files map[string][]byte) {
	t.Helper()
	check := CheckerPath(t)
	if check == "" {
		SkipOrFail(t, "the real Mermaid check was skipped: ../shared/tools/mermaid/check not found above the repository (it needs the shared folder, Node.js ≥ 20.19 and npm)")
	}
	dir := t.TempDir()
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	args := []string{"-q"}
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	cmd := exec.Command(check, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitCode() == 1:
		t.Errorf("the real Mermaid parser rejected some output:\n%s", out.String())
	case errors.As(err, &exit) && exit.ExitCode() == 2:
		SkipOrFail(t, "the real Mermaid check could not run (Node.js or npm missing?): "+out.String())
	default:
		SkipOrFail(t, "the real Mermaid check could not start: "+err.Error())
	}
}
