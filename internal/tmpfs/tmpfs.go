//go:build linux

// Package tmpfs mounts small tmpfs file systems for tests that need a real
// full disk or a real read-only file system (which even root cannot
// write). It needs Linux and the privilege to mount; tests skip without.
package tmpfs

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a fresh folder under t.TempDir()
// and unmounts it when the test ends. It skips the test where mounting is
// not allowed.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v): this test needs a real small or read-only file system", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// ReadOnly remounts the tmpfs at dir (from Mount) read-only: from now on
// every write under it fails with EROFS, for root too.
func ReadOnly(t testing.TB, dir string) {
	t.Helper()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
