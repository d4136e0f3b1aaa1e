package importerstest

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Mkfifo makes a FIFO at path (and its folder), skipping the test where
// FIFOs cannot be made; once the test ends it is opened for writing and
// closed, which releases a reader still blocked on it.
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
}

// Within runs f and fails the test when it has not returned after 10 s:
// what must never wait on a FIFO.
func Within(t testing.TB, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s (a FIFO opened for reading)", what)
	}
}
