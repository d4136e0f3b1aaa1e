package render

import (
	"os"
	"path/filepath"
	"testing"
)

// CacheDir keeps Graphviz's compiled module in the user cache folder,
// private to this user, and uses no folder there that someone else could
// have written: one that others may write, a link, one of another user.
// Without a user cache folder there is no cache (and none is made up).
func TestCacheDir(t *testing.T) {
	base := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", base)
	if got, err := os.UserCacheDir(); err != nil || got != base {
		t.Skipf("the user cache folder here is not $XDG_CACHE_HOME (%q, %v)", got, err)
	}
	want := filepath.Join(base, "inspect", "go-graphviz")
	if got := CacheDir(); got != want {
		t.Fatalf("CacheDir() = %q, want %q", got, want)
	}
	fi, err := os.Stat(want)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Fatalf("the cache folder: %v, %v; want a folder of mode 0700", fi, err)
	}
	if got := CacheDir(); got != want {
		t.Errorf("CacheDir() the second time = %q, want %q", got, want)
	}

	inspect := filepath.Join(base, "inspect")
	os.Chmod(inspect, 0o777)
	if got := CacheDir(); got != "" {
		t.Errorf("with %s writable by others: CacheDir() = %q, want none", inspect, got)
	}
	os.Chmod(inspect, 0o755)
	if got := CacheDir(); got != want {
		t.Errorf("with %s 0755: CacheDir() = %q, want %q", inspect, got, want)
	}

	elsewhere := t.TempDir()
	os.Chmod(elsewhere, 0o700)
	os.Remove(want)
	if err := os.Symlink(elsewhere, want); err != nil {
		t.Fatal(err)
	}
	if got := CacheDir(); got != "" {
		t.Errorf("with %s a link: CacheDir() = %q, want none", want, got)
	}
	os.Remove(want)

	if os.Getuid() == 0 {
		os.Mkdir(want, 0o700)
		if err := os.Chown(want, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if got := CacheDir(); got != "" {
			t.Errorf("with %s another user's: CacheDir() = %q, want none", want, got)
		}
		os.Remove(want)
	}

	missing := filepath.Join(base, "no-such-folder")
	t.Setenv("XDG_CACHE_HOME", missing)
	if got := CacheDir(); got != "" {
		t.Errorf("without a user cache folder: CacheDir() = %q, want none", got)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("CacheDir made the user cache folder %s: %v", missing, err)
	}
}
