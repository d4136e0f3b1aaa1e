package importers

import (
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"
)

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadInstructions: the files named, a folder's .md files in name
// order, each once; nothing of a name climbing out, of a symlink out, of a
// FIFO (never waited on) or of a file over the limit.
func TestReadInstructions(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(outside, "secret.md"), "secret\n")
	writeTestFile(t, filepath.Join(dir, "AGENTS.md"), "# rules\n")
	writeTestFile(t, filepath.Join(dir, "agents", "b.md"), "b\n")
	writeTestFile(t, filepath.Join(dir, "agents", "a.md"), "a\n")
	writeTestFile(t, filepath.Join(dir, "agents", "notes.txt"), "not md\n")
	writeTestFile(t, filepath.Join(dir, "big.md"), string(make([]byte, MaxInstructionFile+1)))
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(dir, "agents", "c.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "CLAUDE.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // release a reader blocked on it, if any
		if f, err := os.OpenFile(filepath.Join(dir, "CLAUDE.md"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := make(chan []string)
	go func() {
		var paths []string
		for _, f := range ReadInstructions(dir, []string{"CLAUDE.md", "AGENTS.md", "agents/*.md", "AGENTS.md", "big.md",
			"../" + filepath.Base(outside) + "/secret.md", "out/secret.md", "out/*.md", "/etc/hostname", `agents\a.md`}) {
			paths = append(paths, f.Path)
			if len(f.SHA256) != 64 {
				t.Errorf("%s: sha256 %q", f.Path, f.SHA256)
			}
		}
		done <- paths
	}()
	select {
	case paths := <-done:
		if want := []string{"AGENTS.md", "agents/a.md", "agents/b.md"}; !reflect.DeepEqual(paths, want) {
			t.Errorf("read %v, want %v", paths, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on the FIFO")
	}
	if got := ReadInstructions("", []string{"AGENTS.md"}); got != nil {
		t.Errorf("no folder: %v", got)
	}
}

// TestInstructionDir: the project folder named wins; else the session's
// folder only when the import runs in it.
func TestInstructionDir(t *testing.T) {
	cwd, here := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(cwd, link); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opt       Options
		cwd, want string
	}{
		{Options{}, cwd, ""},
		{Options{Here: here}, cwd, ""},
		{Options{Here: cwd}, cwd, cwd},
		{Options{Here: cwd + "/"}, cwd, cwd},
		{Options{Here: link}, cwd, cwd}, // the same folder by another name
		{Options{Here: here}, "", ""},
		{Options{Project: here}, cwd, here},
		{Options{Project: here, Here: cwd}, cwd, here},
		{Options{Project: here}, "", here},
	} {
		if got := tt.opt.InstructionDir(tt.cwd); got != tt.want {
			t.Errorf("%+v.InstructionDir(%q) = %q, want %q", tt.opt, tt.cwd, got, tt.want)
		}
	}
}

// TestOpenIn: a file inside opens; a symlink out, a path outside, a FIFO
// and a folder do not.
func TestOpenIn(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(dir, "a", "in.jsonl"), "{}\n")
	writeTestFile(t, filepath.Join(outside, "x.jsonl"), "{}\n")
	os.Symlink(filepath.Join(outside, "x.jsonl"), filepath.Join(dir, "a", "out.jsonl"))
	os.Symlink("in.jsonl", filepath.Join(dir, "a", "alias.jsonl"))
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	for name, ok := range map[string]bool{
		filepath.Join(dir, "a", "in.jsonl"):    true,
		filepath.Join(dir, "a", "alias.jsonl"): true, // a link inside the folder
		filepath.Join(dir, "a", "out.jsonl"):   false,
		filepath.Join(outside, "x.jsonl"):      false,
		filepath.Join(dir, "fifo"):             false,
		filepath.Join(dir, "a"):                false,
	} {
		f, err := OpenIn(dir, name)
		if (err == nil) != ok {
			t.Errorf("OpenIn(%s): %v", name, err)
		}
		if f != nil {
			f.Close()
		}
		if IsFileIn(dir, name) != ok {
			t.Errorf("IsFileIn(%s) = %v", name, !ok)
		}
	}
	if _, err := OpenRegular(filepath.Join(dir, "fifo")); err == nil {
		t.Error("OpenRegular(a FIFO) opened it")
	}
}
