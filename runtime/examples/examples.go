// Package examples holds the projects inspect ships: the starter project
// `inspect init` writes and the scripted project `inspect demo` runs. Both
// are embedded, so they work from a bare binary.
package examples

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/inspect-dev/inspect/snapshot"
)

//go:embed fork-instructions.md all:init all:demo
var files embed.FS

// ForkInstructions is our agents/fork-instructions.md: the runtime's rules
// for forking, as the model reads them. Both projects get a copy.
func ForkInstructions() string {
	b, err := files.ReadFile("fork-instructions.md")
	if err != nil {
		panic("internal error: embedded fork-instructions.md missing")
	}
	return string(b)
}

// Init is the starter project written by `inspect init`.
func Init() fs.FS { return sub("init") }

// Demo is the scripted project run by `inspect demo`: a hand-off, a fork and
// two topology mistakes (a missed fan-out and an uneven fork).
func Demo() fs.FS { return sub("demo") }

func sub(dir string) fs.FS {
	f, err := fs.Sub(files, dir)
	if err != nil {
		panic("internal error: embedded " + dir + " missing")
	}
	return f
}

// Write copies project into dir, adding agents/fork-instructions.md. It
// refuses to overwrite an existing file and returns the paths written,
// relative to dir.
func Write(project fs.FS, dir string) ([]string, error) {
	var paths []string
	err := fs.WalkDir(project, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	paths = append(paths, snapshot.ForkInstructionsFile)
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(p))); err == nil {
			return nil, fmt.Errorf("%s already exists; choose an empty or new folder", filepath.Join(dir, filepath.FromSlash(p)))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	for _, p := range paths {
		var b []byte
		if p == snapshot.ForkInstructionsFile {
			b = []byte(ForkInstructions())
		} else if b, err = fs.ReadFile(project, p); err != nil {
			return nil, err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return nil, err
		}
	}
	return paths, nil
}
