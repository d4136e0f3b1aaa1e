package all_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestFIFO_EveryFormat: a FIFO given as a session is neither detected nor
// read by any format, and nothing waits on it (it has no writer).
func TestFIFO_EveryFormat(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "session.jsonl")
	importerstest.Mkfifo(t, fifo)
	for _, f := range all.Formats() {
		importerstest.Within(t, f.Name(), func() {
			if f.Detect(fifo) {
				t.Errorf("%s: Detect(a FIFO) = true", f.Name())
			}
			if _, err := f.Read(context.Background(), fifo, importers.Options{}); err == nil {
				t.Errorf("%s: Read(a FIFO) gave no error", f.Name())
			}
		})
	}
}
