package main

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A shared temp folder where another user ran inspect first holds a
// go-graphviz cache this user cannot read; go-graphviz used to panic there,
// taking every command down (in its package init then; at the first drawing
// now that it loads lazily). Runs the commands as "nobody", drawing too.
func TestStartsWithForeignGraphvizCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody here")
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)

	shared, err := os.MkdirTemp("", "inspect-shared-tmp-") // t.TempDir's parent is private
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	os.Chmod(shared, 0o1777) // like /tmp
	runs := filepath.Join(shared, "runs.db")
	recordInto(t, runs, "fanout-compact", "0123456789ab")
	os.Chmod(runs, 0o644)
	draw := `["graph","--db","` + runs + `","--format","svg"]`
	// Root fills the shared cache first, with files only root can read.
	bin := filepath.Join(shared, "inspect.test")
	copyFile(t, os.Args[0], bin)
	first := exec.Command(bin, "-test.run=^$")
	first.Env = append(os.Environ(), "TMPDIR="+shared, "INSPECT_TEST_ARGS="+draw)
	if out, err := first.CombinedOutput(); err != nil {
		t.Fatalf("first run as root: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(shared, "go-graphviz")); err != nil {
		t.Fatalf("the first drawing left no go-graphviz cache: %v", err)
	}
	home := filepath.Join(shared, "home")
	os.Mkdir(home, 0o777)
	for _, args := range []string{`["--help"]`, `["graph","--help"]`, draw} {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), "TMPDIR="+shared, "HOME="+home, "XDG_CACHE_HOME=", "INSPECT_TEST_ARGS="+args)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "panic") {
			t.Errorf("inspect %s as nobody beside root's cache: %v\n%s", args, err, out)
		}
		if args == draw && !strings.Contains(string(out), "<svg") {
			t.Errorf("inspect %s as nobody drew no SVG:\n%.300s", args, out)
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
