package all_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/store"
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

// TestWatch_FIFOSwappedIn: a session file replaced by a FIFO while
// `inspect import --watch` follows it (issue 23, item 5): the re-import
// it sets off fails at once saying why, the watch goes on, and ends when
// asked — nothing waits for a writer that never comes.
func TestWatch_FIFOSwappedIn(t *testing.T) {
	for _, tt := range []struct{ format, sample string }{
		{"otlp", "../otlp/testdata/langgraph-supervisor.otlp.jsonl"},
		{"codex", "../codex/testdata/sessions/2026/03/02/rollout-2026-03-02T11-00-00-019a1c00-0000-7000-8000-000000000005.jsonl"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			var f importers.Format
			for _, x := range all.Formats() {
				if x.Name() == tt.format {
					f = x
				}
			}
			if f == nil {
				t.Fatalf("no format %s", tt.format)
			}
			data, err := os.ReadFile(tt.sample)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.Base(tt.sample))
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			results := make(chan error, 16)
			done := make(chan error, 1)
			go func() {
				done <- importers.Watch(ctx, db, f, path, importers.Options{}, 10*time.Millisecond, func(_ []importers.Result, err error) {
					select {
					case results <- err:
					default:
					}
				})
			}()
			next := func(what string) error {
				t.Helper()
				select {
				case err := <-results:
					return err
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: no import after 10 s (blocked on a FIFO?)", what)
					return nil
				}
			}
			if err := next("the first import"); err != nil {
				t.Fatalf("first import: %v", err)
			}
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			importerstest.Mkfifo(t, path)
			for {
				err := next("the re-import of the FIFO")
				if err != nil {
					if !strings.Contains(err.Error(), "not a regular file") {
						t.Errorf("re-import of a FIFO: %v, want it refused as not a regular file", err)
					}
					break
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Watch = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Watch still running 10 s after it was cancelled")
			}
		})
	}
}
