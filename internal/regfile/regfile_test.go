package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpen: a regular file is opened and read; a FIFO with no writer and
// a folder are refused at once with ErrNotRegular, naming what they are
// (os.Open of the FIFO waits for a writer for ever).
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("data"), 0o644)
	if b, err := ReadFile(file); err != nil || string(b) != "data" {
		t.Errorf("ReadFile(regular) = %q, %v", b, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFile(fifo); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a FIFO") {
			t.Errorf("ReadFile(FIFO) = %v, want ErrNotRegular naming a FIFO", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadFile(FIFO) still blocked after 10 s")
	}
	if _, err := Open(dir); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a folder") {
		t.Errorf("Open(folder) = %v, want ErrNotRegular naming a folder", err)
	}
	if _, err := Open(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want ErrNotExist", err)
	}
}
