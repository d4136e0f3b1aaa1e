// Package regfile opens the files a user names (a session to import, a
// runs database, a config, a baseline, a prompt file) only when they are
// regular files, without blocking: a FIFO, a socket or a device given
// where a file is expected is refused at once instead of waiting for a
// writer for ever (DESIGN §11, Bounds).
package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is the error of opening a FIFO, a socket, a device or a
// folder where a file was expected.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading when it is a regular file. It opens without
// blocking (O_NONBLOCK: opening a FIFO for reading returns at once) and
// checks what it opened, so there is no gap for a file swapped in between.
// The error of anything else wraps ErrNotRegular in an *fs.PathError.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return Check(f, path)
}

// Check keeps f (opened from path) when it is a regular file, else closes
// it and returns an *fs.PathError wrapping ErrNotRegular.
func Check(f *os.File, path string) (*os.File, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode()))}
	}
	return f, nil
}

// ReadFile reads the regular file at path (Open), as os.ReadFile does.
func ReadFile(path string) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Kind names a file mode that is not a regular file ("a FIFO", "a socket",
// "a device", "a folder", "a special file"), for messages.
func Kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a folder"
	}
	return "a special file"
}
