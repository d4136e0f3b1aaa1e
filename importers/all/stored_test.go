package all_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/all"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Fixtures imports every committed fixture of every format
// (detected as `inspect import` detects them) and the real Kimi Code
// sample, and requires each stored run — every node, request and
// response — to be the one testdata/stored holds: the one mapping of
// importers.Write must keep recording the same runs when it changes.
func TestStoredRun_Fixtures(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, glob := range []string{"openaiagents/testdata/*.json*", "otlp/testdata/*.otlp.*", "codex/testdata/sessions/*/*/*/*.jsonl"} {
		ps, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(glob)))
		paths = append(paths, ps...)
	}
	if len(paths) < 12 {
		t.Fatalf("only %d fixtures found", len(paths))
	}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		name := strings.NewReplacer(string(filepath.Separator), "_", ".", "_").Replace(rel)
		t.Run(name, func(t *testing.T) {
			f := detect(t, p)
			importerstest.SameStoredRun(t, name, f, p, root, false)
		})
	}
	real := importerstest.Transcripts(t)
	t.Run("kimi-code_sample-main", func(t *testing.T) {
		p := filepath.Join(real, "kimi-code", "sample-main")
		importerstest.SameStoredRun(t, "kimi-code_sample-main", detect(t, p), p, real, false)
	})
}

func detect(t *testing.T, path string) importers.Format {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	f, err := importers.Detect(all.Formats(), path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
