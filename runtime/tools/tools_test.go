package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/runtime/project"
)

func workspace(t *testing.T) (*Workspace, string) {
	t.Helper()
	base := t.TempDir()
	ws := filepath.Join(base, "workspace")
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "docs", "a.md"), []byte("one\ntwo\nthree\n"), 0o644)
	os.WriteFile(filepath.Join(base, "secret.txt"), []byte("outside"), 0o644)
	return &Workspace{Dir: ws}, base
}

func TestWorkspace_Containment(t *testing.T) {
	w, base := workspace(t)
	if err := os.Symlink(filepath.Join(base, "secret.txt"), filepath.Join(w.Dir, "leak")); err != nil {
		t.Skip("symlinks not available:", err)
	}
	os.Symlink(base, filepath.Join(w.Dir, "up"))
	os.Symlink("docs/a.md", filepath.Join(w.Dir, "inside")) // a link that stays inside is fine
	tests := []struct {
		name, tool, args, want string
	}{
		{"dotdot", "read_file", `{"path": "../secret.txt"}`, "leaves the workspace"},
		{"dotdot inside path", "read_file", `{"path": "docs/../../secret.txt"}`, "leaves the workspace"},
		{"absolute", "read_file", `{"path": "` + filepath.Join(base, "secret.txt") + `"}`, "absolute path"},
		{"symlink file", "read_file", `{"path": "leak"}`, "symlink that leaves the workspace"},
		{"symlink dir", "list_dir", `{"path": "up"}`, "symlink that leaves the workspace"},
		{"write through symlink dir", "write_file", `{"path": "up/pwned.txt", "content": "x"}`, "symlink that leaves the workspace"},
		{"write absolute", "write_file", `{"path": "/tmp/pwned.txt", "content": "x"}`, "absolute path"},
		{"find outside", "find_files", `{"pattern": "secret", "path": ".."}`, "leaves the workspace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := w.Call(context.Background(), tt.tool, tt.args)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Call(%s, %s) = %q, %v; want an error containing %q", tt.tool, tt.args, out, err, tt.want)
			}
			if strings.Contains(out, "outside") {
				t.Errorf("the outside file leaked: %q", out)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(base, "pwned.txt")); err == nil {
		t.Error("write_file wrote outside the workspace")
	}
	if out, err := w.Call(context.Background(), "read_file", `{"path": "inside"}`); err != nil || out != "one\ntwo\nthree\n" {
		t.Errorf("read through an inside symlink = %q, %v", out, err)
	}
}

func TestWorkspace_Tools(t *testing.T) {
	w, _ := workspace(t)
	ctx := context.Background()
	tests := []struct {
		name, tool, args, want string
	}{
		{"read range", "read_file", `{"path": "docs/a.md", "start_line": 2, "end_line": 3}`, "two\nthree\n"},
		{"read from", "read_file", `{"path": "docs/a.md", "start_line": 3}`, "three\n"},
		{"list root", "list_dir", `{}`, "docs/\n"},
		{"list docs", "list_dir", `{"path": "docs"}`, "a.md (14 bytes)\n"},
		{"find", "find_files", `{"pattern": "A.MD"}`, "docs/a.md\n"},
		{"write", "write_file", `{"path": "out/r.md", "content": "hi"}`, "wrote 2 bytes to out/r.md"},
		{"read written", "read_file", `{"path": "out/r.md"}`, "hi"},
	}
	for _, tt := range tests {
		out, err := w.Call(ctx, tt.tool, tt.args)
		if err != nil || out != tt.want {
			t.Errorf("%s: Call = %q, %v; want %q", tt.name, out, err, tt.want)
		}
	}
	for _, bad := range []struct{ tool, args, want string }{
		{"read_file", `{"path": "nope.md"}`, "does not exist"},
		{"read_file", `{"path": "docs/a.md", "start_line": 9}`, "past the end"},
		{"read_file", `{"path": "docs"}`, "is a folder"},
		{"find_files", `{}`, "needs `pattern`"},
		{"read_file", `[1]`, "not the JSON object"},
	} {
		if _, err := w.Call(ctx, bad.tool, bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Call(%s, %s) error = %v, want %q", bad.tool, bad.args, err, bad.want)
		}
	}
}

func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
	script := "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in\n  *fail*) echo 'bad query' >&2; exit 3;;\n  *slow*) sleep 5;;\nesac\necho \"got: $input\"\necho \"key=${OPENAI_API_KEY:-unset}\"\n"
	if err := os.WriteFile(filepath.Join(dir, "tools", "echo.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tool := &project.CommandTool{Name: "search", Command: []string{"./tools/echo.sh"}, Timeout: 300 * time.Millisecond}
	t.Setenv("OPENAI_API_KEY", "fake-key-must-not-reach-tools")
	ctx := context.Background()

	out, err := RunCommand(ctx, dir, tool, `{"query":"q3"}`)
	if err != nil || out != "got: {\"query\":\"q3\"}\nkey=unset\n" {
		t.Errorf("RunCommand = %q, %v; want the JSON arguments echoed and no key", out, err)
	}
	if _, err := RunCommand(ctx, dir, tool, `{"query":"fail"}`); err == nil || !strings.Contains(err.Error(), "exited with status 3: bad query") {
		t.Errorf("non-zero exit: err = %v, want status 3 and stderr", err)
	}
	start := time.Now()
	if _, err := RunCommand(ctx, dir, tool, `{"query":"slow"}`); err == nil || !strings.Contains(err.Error(), "timed out after 300ms") {
		t.Errorf("slow tool: err = %v, want a timeout", err)
	}
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("the timeout took %s", el)
	}
	if _, err := RunCommand(ctx, dir, tool, `{nope`); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("bad JSON: err = %v", err)
	}
}

// A relative project folder (inspect run tp, ./tp, deep/x/tp) still finds
// the tool's program and runs it in the project folder: the program path
// was once joined with the folder and then run from inside it, so
// tp/tools/echo.sh was looked for as tp/tp/tools/echo.sh.
func TestRunCommand_RelativeProjectFolder(t *testing.T) {
	base := t.TempDir()
	for _, rel := range []string{"tp", "./tp", "deep/x/tp"} {
		t.Run(rel, func(t *testing.T) {
			dir := filepath.Join(base, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Join(dir, "tools"), 0o755)
			if err := os.WriteFile(filepath.Join(dir, "tools", "pwd.sh"), []byte("#!/bin/sh\ncat >/dev/null\npwd\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Chdir(base)
			tool := &project.CommandTool{Name: "where", Command: []string{"./tools/pwd.sh"}, Timeout: 10 * time.Second}
			out, err := RunCommand(context.Background(), rel, tool, `{}`)
			want, _ := filepath.EvalSymlinks(dir)
			got, _ := filepath.EvalSymlinks(strings.TrimSpace(out))
			if err != nil || got != want {
				t.Errorf("RunCommand(%q) = %q, %v; want it run in %s", rel, out, err, want)
			}
		})
	}
}
