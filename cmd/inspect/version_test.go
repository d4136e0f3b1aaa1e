package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: --version names what the build recorded — a module
// version, the pseudo-version Go stamps from git, or the commit, its time
// and whether the tree was modified — and a build that recorded nothing
// says how to get a stamped one rather than a bare "devel".
func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"tagged", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0 go1.26.8"},
		{"pseudo-version from git",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261202051731-3ecb1aa1b2c3+dirty"},
				Settings: vcs("vcs.revision", "3ecb1aa1b2c3d4e5f6", "vcs.time", "2026-12-02T05:17:31Z", "vcs.modified", "true")},
			"v0.0.0-20261202051731-3ecb1aa1b2c3+dirty (2026-12-02T05:17:31Z) go1.26.8"},
		{"commit only",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: vcs("vcs.revision", "3ecb1aa1b2c3d4e5f6", "vcs.time", "2026-12-02T05:17:31Z", "vcs.modified", "true")},
			"devel (commit 3ecb1aa1b2c3, 2026-12-02T05:17:31Z, modified) go1.26.8"},
		{"clean commit",
			&debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
				Settings: vcs("vcs.revision", "3ecb1aa1b2c3d4e5f6", "vcs.modified", "false")},
			"devel (commit 3ecb1aa1b2c3) go1.26.8"},
	}
	for _, tt := range tests {
		if got := versionOf(tt.info); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, info := range []*debug.BuildInfo{nil, {GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}} {
		got := versionOf(info)
		if !strings.HasPrefix(got, "devel (no version recorded") || !strings.Contains(got, "go build -buildvcs=true ./cmd/inspect") {
			t.Errorf("an unstamped build: %q does not say how to stamp one", got)
		}
	}
}

// TestGoRunCommand: a process `go run` built (its argv0 in the build
// cache's exe folder) spells hints as the `go run` that runs it again from
// the shell's folder; any other inspect is "inspect".
func TestGoRunCommand(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module "+modulePath+"\n\ngo 1.24\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(root, "docs", "x")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goRun := filepath.Join(os.TempDir(), "go-build123456", "b001", "exe", "inspect")
	// a later go run of the same build runs the executable the build cache kept
	cached := filepath.Join(os.TempDir(), "cache", "go-build", "a6", "a6"+strings.Repeat("0f", 31)+"-d", "inspect")
	devel := &debug.BuildInfo{Path: mainPackage, Main: debug.Module{Path: modulePath, Version: "(devel)"}}
	tests := []struct {
		argv0, dir string
		info       *debug.BuildInfo
		want       string
	}{
		{goRun, root, devel, "go run ./cmd/inspect"},
		{goRun, filepath.Join(root, "cmd", "inspect"), devel, "go run ."},
		{goRun, sub, devel, "go run ../../cmd/inspect"},
		{goRun, other, devel, ""},
		{goRun, "/", devel, ""},
		{goRun, other, &debug.BuildInfo{Path: mainPackage, Main: debug.Module{Path: modulePath, Version: "v1.4.0"}}, "go run " + mainPackage + "@v1.4.0"},
		{cached, root, devel, "go run ./cmd/inspect"},
		{filepath.Join(os.TempDir(), "cache", "a6", strings.Repeat("b", 64)+"-d", "inspect"), root, devel, ""},
		{filepath.Join(os.TempDir(), "cache", "a6", strings.Repeat("a", 63)+"-d", "inspect"), root, devel, ""},
		{"/usr/local/bin/inspect", root, devel, ""},
		{filepath.Join(root, "inspect"), root, devel, ""},
	}
	for _, tt := range tests {
		if got := goRunCommand(tt.argv0, tt.dir, tt.info); got != tt.want {
			t.Errorf("goRunCommand(%s, %s): %q, want %q", tt.argv0, tt.dir, got, tt.want)
		}
	}
}

// TestDemo_GoRunHints: `go run ./cmd/inspect demo` from the module's root,
// as the README's first step, prints hints a shell there runs as they are
// (`go run ./cmd/inspect graph …`; before: `inspect graph …`, with no
// inspect on PATH) and says how to put inspect on PATH.
func TestDemo_GoRunHints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds inspect with go run")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "demo.db")
	cmd := exec.Command(goBin, "run", "./cmd/inspect", "demo", "--db", db)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=", "NO_COLOR=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./cmd/inspect demo: %v\n%s", err, out)
	}
	// The second go run of the same build runs the executable the build
	// cache kept (Go 1.24 on), not one in a go-build temporary folder: the
	// hints must read the same (they said "inspect graph …" before).
	again := exec.Command(goBin, "run", "./cmd/inspect", "demo", "--db", db)
	again.Dir, again.Env = root, cmd.Env
	out, err := again.CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./cmd/inspect demo, again: %v\n%s", err, out)
	}
	hints := regexp.MustCompile(`(?m)^next: (.*)$`).FindAllStringSubmatch(string(out), -1)
	if len(hints) == 0 {
		t.Fatalf("no next: hints:\n%s", out)
	}
	for _, h := range hints {
		if !strings.HasPrefix(h[1], "go run ./cmd/inspect ") {
			t.Errorf("hint %q is not the go run form", h[1])
		}
	}
	if !strings.Contains(string(out), "note: `go install ./cmd/inspect` puts inspect in $(go env GOPATH)/bin") {
		t.Errorf("the demo does not say how to put inspect on PATH:\n%s", out)
	}
	paste := exec.Command("sh", "-c", hints[0][1])
	paste.Dir = root
	paste.Env = cmd.Env
	if out, err := paste.CombinedOutput(); err != nil {
		t.Errorf("pasting %q: %v\n%s", hints[0][1], err, out)
	}
}
