//go:build !linux

package tmpfs

import "testing"

// Mount skips: tmpfs mounts need Linux.
func Mount(t testing.TB, size int64) string {
	t.Skip("a tmpfs mount needs Linux")
	return ""
}

// ReadOnly skips: tmpfs mounts need Linux.
func ReadOnly(t testing.TB, dir string) { t.Skip("a tmpfs mount needs Linux") }
