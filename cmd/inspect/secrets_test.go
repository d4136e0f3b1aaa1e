package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/internal/keyecho"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
)

const (
	leakKey      = "fake-leak-key-0c6e1b9f52d4"
	leakPassword = "fake-leak-url-password-93a1"
)

// TestSecrets_KeyNeverLeaves: a provider on 127.0.0.1 echoes the key in
// every way keyecho knows (401 JSON, 400 text, 500 HTML, a 200 answer, a
// tool call, a streamed answer) and the base URL carries a password. After
// runs, asks, audits and diffs in every format, neither appears in any
// file (the database, its -wal and -shm, every output file) nor in any
// output stream (issue 11, defect 2).
func TestSecrets_KeyNeverLeaves(t *testing.T) {
	dir := t.TempDir()
	project := filepath.Join(dir, "http")
	if err := runtimetest.CopyDir(filepath.Join("..", "..", "runtime", "testdata", "http"), project); err != nil {
		t.Fatal(err)
	}
	srv := keyecho.New(t, keyecho.OK)
	base := strings.Replace(srv.URL, "http://", "http://user:"+leakPassword+"@", 1) + "/v1"
	env := map[string]string{"OPENAI_API_KEY": leakKey, "OPENAI_BASE_URL": base}
	db := filepath.Join(dir, "runs.db")
	var streams bytes.Buffer
	inspect := func(args ...string) {
		t.Helper()
		f, out, errOut := testFactoryEnv(t, env)
		f.DBPath = db
		run(context.Background(), f, args)
		f.Close()
		streams.Write(out.Bytes())
		streams.Write(errOut.Bytes())
	}
	for _, mode := range keyecho.Modes {
		if mode == keyecho.OKStream {
			continue // the runtime does not stream
		}
		srv.SetMode(mode)
		inspect("run", project, "--task", "go "+mode)
	}
	for _, mode := range keyecho.Modes {
		srv.SetMode(mode)
		inspect("ask", "n2")
		inspect("ask", "n2", "--replay", "--samples", "2")
	}
	for _, format := range []string{"text", "markdown", "json", "sarif", "junit"} {
		inspect("audit", "--format", format)
	}
	for _, format := range []string{"markdown", "json", "junit", "sarif"} {
		inspect("diff", "latest", "latest", "--format", format)
	}
	inspect("runs")
	inspect("runs", "--json")
	for _, format := range []string{"mmd", "dot", "json", "svg", "png"} {
		inspect("graph", "-o", filepath.Join(dir, "graph."+format))
	}
	for i := 1; i <= 8; i++ {
		inspect("show", "n"+string(rune('0'+i)))
	}
	if srv.Requests() < 10 {
		t.Fatalf("the server saw %d requests; the runs and asks did not reach it", srv.Requests())
	}
	if !strings.Contains(streams.String(), "[redacted]") {
		t.Error("no output shows [redacted]: the echo never came back, so this test proves nothing")
	}
	for _, secret := range []string{leakKey, leakPassword, keyecho.Escape(leakKey)} {
		if strings.Contains(streams.String(), secret) {
			i := strings.Index(streams.String(), secret)
			t.Errorf("an output stream holds %q: …%s…", secret, streams.String()[max(0, i-80):i])
		}
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasPrefix(path, project) {
				return nil
			}
			b, _ := os.ReadFile(path)
			if bytes.Contains(b, []byte(secret)) {
				t.Errorf("%s holds %q", filepath.Base(path), secret)
			}
			return nil
		})
	}
}
