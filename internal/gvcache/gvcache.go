// Package gvcache keeps go-graphviz from crashing inspect when it draws.
//
// go-graphviz compiles its WebAssembly build of Graphviz when inspect first
// draws (third_party/go-graphviz loads it lazily; upstream does it in a
// package init), caching the result in $TMPDIR/go-graphviz. When that folder
// belongs to another user (a shared /tmp where someone else ran inspect
// first), or the temp folder is not writable, the compile panics, and with it
// the command. Imported (blank) by cmd/inspect, this package's init decides
// from the folder's owner and mode, before anything reads TMPDIR, and only
// in those cases points TMPDIR at a folder of this user's own (under the
// user cache folder, so the compiled cache is kept).
//
// It runs early: Go initializes packages in import-path order among those
// whose imports are ready, and this package imports only the standard
// library. cmd/inspect's TestStartsWithForeignGraphvizCache checks it, as
// another user, drawing.
package gvcache

import (
	"os"
	"path/filepath"
)

func init() {
	if usable(filepath.Join(os.TempDir(), "go-graphviz")) {
		return
	}
	base, err := os.UserCacheDir()
	if err == nil {
		dir := filepath.Join(base, "inspect", "tmp")
		if os.MkdirAll(dir, 0o700) == nil && usable(filepath.Join(dir, "go-graphviz")) {
			os.Setenv("TMPDIR", dir)
			return
		}
	}
	// No cache folder of our own: a private temp folder, without the cache
	// (each command then compiles Graphviz again, about a second).
	if dir, err := os.MkdirTemp("", "inspect-graphviz-"); err == nil {
		os.Setenv("TMPDIR", dir)
	}
}

// usable reports whether go-graphviz can use dir as its cache: a folder we
// own and can write (the usual case, decided from its mode without touching
// the disk), or none yet in a writable parent.
func usable(dir string) bool {
	fi, err := os.Stat(dir)
	if err != nil {
		return os.IsNotExist(err) && writable(filepath.Dir(dir))
	}
	return fi.IsDir() && ownedByMe(fi) && fi.Mode().Perm()&0o300 == 0o300
}

// writable reports whether a file can be created in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".inspect-probe-")
	if err != nil {
		return false
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return true
}
