package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestFIFO_UserPaths: every path a user gives inspect is checked for
// what it is before it is read, so a FIFO (which blocks an open for
// reading until a writer comes, for ever when none does) is refused at
// once, saying it is not a regular file (issue 23, item 5). Before, each
// of these waited for ever: import FILE looked for a SQLite header
// (store.IsDatabase), --db and FILE.db:RUN checked the header
// (store's checkHeader), and --config, --baseline, --prompt, --script and
// a project's agents.yaml were read with os.Open/os.ReadFile.
func TestFIFO_UserPaths(t *testing.T) {
	ctx := context.Background()
	// a project that records a run with a model call (n2), for ask
	proj := t.TempDir()
	os.MkdirAll(filepath.Join(proj, "agents"), 0o755)
	os.WriteFile(filepath.Join(proj, "agents.yaml"), []byte("agents:\n  - name: a\n    description: A.\n"), 0o644)
	os.WriteFile(filepath.Join(proj, "agents", "a.md"), []byte("You are a."), 0o644)
	os.WriteFile(filepath.Join(proj, "script.yaml"), []byte("task: go\nconversations:\n  trunk:\n    - say: done\n"), 0o644)
	for _, tt := range []struct {
		name string
		args func(fifo, fifoDB, fifoProj, out string) []string
	}{
		{"import FILE", func(fifo, db, p, out string) []string { return []string{"import", db} }},
		{"--db", func(fifo, db, p, out string) []string { return []string{"runs", "--db", db} }},
		{"--db of a writer", func(fifo, db, p, out string) []string { return []string{"tag", "latest", "k=v", "--db", db} }},
		{"migrate FILE", func(fifo, db, p, out string) []string { return []string{"migrate", db} }},
		{"diff FILE.db:RUN", func(fifo, db, p, out string) []string { return []string{"diff", db + ":latest", "latest"} }},
		{"export from --db", func(fifo, db, p, out string) []string {
			return []string{"export", "--db", db, "--format", "otlp", "-o", filepath.Join(out, "out.json")}
		}},
		{"report from --db", func(fifo, db, p, out string) []string {
			return []string{"report", "--db", db, "-o", filepath.Join(out, "report.html")}
		}},
		{"--config", func(fifo, db, p, out string) []string { return []string{"audit", "--config", fifo} }},
		{"--baseline", func(fifo, db, p, out string) []string { return []string{"audit", "--baseline", fifo} }},
		{"ask --prompt", func(fifo, db, p, out string) []string {
			return []string{"ask", "latest", "n2", "--prompt", fifo, "--dry-run"}
		}},
		{"run --script", func(fifo, db, p, out string) []string { return []string{"run", proj, "--script", fifo} }},
		{"run PROJECT's agents.yaml", func(fifo, db, p, out string) []string { return []string{"run", p, "--task", "go"} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// the factory is closed only once the command returned: before
			// the fix, SQLite itself waited on the FIFO holding the
			// factory's lock, and the test would never end
			out, errOut := new(bytes.Buffer), new(bytes.Buffer)
			f := NewFactory(&IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut, NoColor: true, Width: 80},
				func(string) string { return "" })
			home := t.TempDir()
			f.DBPath = filepath.Join(home, "runs.db")
			f.Getwd = func() (string, error) { return home, nil }
			if code := run(ctx, f, []string{"run", proj, "--script", filepath.Join(proj, "script.yaml")}); code != ExitOK {
				t.Fatalf("recording the run: exit %d, %s", code, errOut)
			}
			errOut.Reset()
			// made after the factory, so that a reader still blocked on
			// one (before the fix) is released before the factory closes
			dir := t.TempDir()
			fifo, fifoDB, fifoProj := filepath.Join(dir, "fifo"), filepath.Join(dir, "runs.db"), filepath.Join(dir, "proj")
			importerstest.Mkfifo(t, fifo)
			importerstest.Mkfifo(t, fifoDB)
			importerstest.Mkfifo(t, filepath.Join(fifoProj, "agents.yaml"))
			args := tt.args(fifo, fifoDB, fifoProj, t.TempDir())
			var code int
			importerstest.Within(t, strings.Join(args, " "), func() { code = run(ctx, f, args) })
			f.Close()
			if code == ExitOK || !strings.Contains(errOut.String(), "not a regular file") {
				t.Errorf("exit %d, stderr %q; want a refusal saying it is not a regular file", code, errOut)
			}
		})
	}
}
