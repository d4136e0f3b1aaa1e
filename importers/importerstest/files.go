package importerstest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/inspect-dev/inspect/importers"
)

// Write writes content to path (slash-separated under dir), making its
// folders.
func Write(t testing.TB, dir, path, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadOne reads path as f and fails unless it gives exactly one session.
func ReadOne(t testing.TB, f importers.Format, path string, opt importers.Options) *importers.Session {
	t.Helper()
	ss, err := f.Read(context.Background(), path, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("%s: %d sessions, want 1", path, len(ss))
	}
	return ss[0]
}

// Forks lists the forks among a conversation's steps, in order.
func Forks(c *importers.Conversation) []*importers.Fork {
	var out []*importers.Fork
	for _, st := range c.Steps {
		if st.Fork != nil {
			out = append(out, st.Fork)
		}
	}
	return out
}
