package importers

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/inspect-dev/inspect/internal/regfile"
)

// ErrNotRegular is the error of opening a FIFO, a socket, a device or a
// folder where a file was expected: an import reads regular files only.
var ErrNotRegular = regfile.ErrNotRegular

// OpenRegular opens path for reading when it is a regular file. It opens
// without blocking and checks what it opened (no gap for a file swapped in
// between), so a FIFO given as a session, or put where an import looks for
// one, is refused at once instead of waiting for a writer for ever.
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return regular(f, path)
}

// OpenIn opens the regular file at path, which lies in folder dir (the
// session's own folder, or the project folder the user named), through
// dir: a symlink or ".." on the way that leads out of dir is not followed,
// and anything but a regular file is refused without blocking (OpenRegular).
// A path outside dir is an error.
func OpenIn(dir, path string) (*os.File, error) {
	rel, ok := within(dir, path)
	if !ok {
		return nil, fmt.Errorf("%s is outside %s", path, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			pe.Path = path // the root's error names the path inside it
		}
		return nil, err
	}
	return regular(f, path)
}

// IsFileIn reports whether path, in folder dir, is a regular file that
// OpenIn would open (a symlink leading out of dir is not one).
func IsFileIn(dir, path string) bool {
	rel, ok := within(dir, path)
	if !ok {
		return false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	return err == nil && fi.Mode().IsRegular()
}

// ReadSmallIn reads the regular file at path in folder dir (OpenIn) when it
// holds at most max bytes; a larger file is an error.
func ReadSmallIn(dir, path string, max int64) ([]byte, error) {
	f, err := OpenIn(dir, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSmall(f, path, max)
}

// ReadSmall reads the regular file at path (OpenRegular) when it holds at
// most max bytes; a larger file is an error.
func ReadSmall(path string, max int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSmall(f, path, max)
}

func readSmall(f *os.File, path string, max int64) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > max {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max { // it grew since
		return nil, fmt.Errorf("%s: larger than %d bytes", path, max)
	}
	return b, nil
}

// regular keeps f when it is a regular file, else closes it.
func regular(f *os.File, path string) (*os.File, error) {
	return regfile.Check(f, path)
}

// within returns path relative to dir when it lies inside it (lexically;
// OpenIn's root then refuses a symlink out). Relative paths are relative
// to the working folder, as the os package reads them.
func within(dir, path string) (string, bool) {
	if dir == "" {
		return "", false
	}
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(path)
	if err1 != nil || err2 != nil {
		return "", false
	}
	r, err := filepath.Rel(ad, ap)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}
