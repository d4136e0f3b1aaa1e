package all_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
)

// TestFIFO_EveryFormat: a FIFO given as a session is neither detected nor
// read by any format, and nothing waits on it (it has no writer).
func TestFIFO_EveryFormat(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "session.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() { // release a reader still blocked on it
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	for _, f := range all.Formats() {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if f.Detect(fifo) {
				t.Errorf("%s: Detect(a FIFO) = true", f.Name())
			}
			if _, err := f.Read(context.Background(), fifo, importers.Options{}); err == nil {
				t.Errorf("%s: Read(a FIFO) gave no error", f.Name())
			}
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: blocked on a FIFO given as the session", f.Name())
		}
	}
}
