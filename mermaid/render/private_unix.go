//go:build unix

package render

import (
	"os"
	"syscall"
)

// privateToMe reports whether fi is this process's user's own, written by no
// one else, and writable and enterable by that user.
func privateToMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != os.Getuid() {
		return false
	}
	perm := fi.Mode().Perm()
	return perm&0o022 == 0 && perm&0o300 == 0o300
}
