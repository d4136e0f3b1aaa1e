package main

import (
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A shared temp folder where another user ran inspect first holds that
// user's Graphviz caches: go-graphviz used to panic there, taking every
// command down (in its package init at first; at the first drawing once it
// loaded lazily), and internal/gvcache then rewrote $TMPDIR for the whole
// process to avoid it. Now the cache lives in the user cache folder
// (mermaid/render.CacheDir) and is only used when it is this user's own.
// Root draws first with both $TMPDIR and $XDG_CACHE_HOME in the shared
// folder, and a cache where upstream go-graphviz kept it ($TMPDIR/go-
// graphviz) is planted beside, readable by root only; then "nobody", with
// the same two variables, asks for help and draws: no panic, and an SVG.
// Last, nobody draws with a cache folder of its own, which the drawing
// fills.
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
	bin := filepath.Join(shared, "inspect.test")
	copyFile(t, os.Args[0], bin)

	// Root draws first: its cache goes to its user cache folder, which
	// here is the shared folder, and nothing to $TMPDIR.
	first := exec.Command(bin, "-test.run=^$")
	first.Env = append(os.Environ(), "TMPDIR="+shared, "XDG_CACHE_HOME="+shared, "INSPECT_TEST_ARGS="+draw)
	if out, err := first.CombinedOutput(); err != nil {
		t.Fatalf("first run as root: %v\n%s", err, out)
	}
	rootCache := filepath.Join(shared, "inspect", "go-graphviz")
	entries, err := os.ReadDir(rootCache)
	if err != nil || len(entries) == 0 {
		t.Fatalf("the first drawing left no cache in %s: %v", rootCache, err)
	}
	// Another user's folders need not be closed to us (another umask, an
	// older inspect): open root's to everyone, its entries stay root's.
	for _, dir := range []string{filepath.Dir(rootCache), rootCache} {
		os.Chmod(dir, 0o755)
	}
	legacy := filepath.Join(shared, "go-graphviz")
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the drawing wrote %s: the cache belongs in the user cache folder (%v)", legacy, err)
	}
	// Upstream's cache, as go-graphviz left it in $TMPDIR: folders others
	// cannot write, with entries only root can read.
	err = filepath.WalkDir(rootCache, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(rootCache, path)
		if d.IsDir() {
			return os.Mkdir(filepath.Join(legacy, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(legacy, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}

	home := filepath.Join(shared, "home")
	os.Mkdir(home, 0o777)
	asNobody := func(args, cacheHome string) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), "TMPDIR="+shared, "HOME="+home, "XDG_CACHE_HOME="+cacheHome, "INSPECT_TEST_ARGS="+args)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.Contains(string(out), "panic") {
			t.Errorf("inspect %s as nobody beside root's caches: %v\n%s", args, err, out)
		}
		if args == draw && !strings.Contains(string(out), "<svg") {
			t.Errorf("inspect %s as nobody drew no SVG:\n%.300s", args, out)
		}
		return string(out)
	}
	for _, args := range []string{`["--help"]`, `["graph","--help"]`, draw} {
		asNobody(args, shared)
	}

	// nobody's own cache folder is used and filled.
	own := filepath.Join(home, ".cache")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, uid, gid); err != nil {
		t.Fatal(err)
	}
	asNobody(draw, own)
	if mine, err := os.ReadDir(filepath.Join(own, "inspect", "go-graphviz")); err != nil || len(mine) == 0 {
		t.Errorf("nobody's drawing left no cache in its own cache folder: %v", err)
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
