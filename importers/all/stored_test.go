package all_test

import (
	"context"
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
	root, paths := fixtures(t)
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

// fixtures lists the committed fixtures of the formats whose tests keep
// them as files, and the importers folder above them.
func fixtures(t *testing.T) (root string, paths []string) {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, glob := range []string{"openaiagents/testdata/*.json*", "otlp/testdata/*.otlp.*", "codex/testdata/sessions/*/*/*/*.jsonl"} {
		ps, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(glob)))
		paths = append(paths, ps...)
	}
	return root, paths
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

// TestWrite_LiveSameAsTree records every fixture's session twice, as a
// whole tree and replayed as a streaming format hands it over
// (importerstest.Replay: each step when asked for, each conversation's end
// and the session's header only once read), and requires the same stored
// run: the mapping reads nothing of a live session before it is known.
func TestWrite_LiveSameAsTree(t *testing.T) {
	_, paths := fixtures(t)
	real := importerstest.Transcripts(t)
	for _, rel := range []string{"kimi-code/sample-main", "kimi-cli/with-tool-calls", "kimi-cli/with-subagent-collapsed",
		"claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl", "claude-code/tool_heavy.jsonl"} {
		paths = append(paths, filepath.Join(real, filepath.FromSlash(rel)))
	}
	ctx := context.Background()
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f := detect(t, p)
			var dumps [2]string
			for i := range dumps {
				ss, err := f.Read(ctx, p, importers.Options{})
				if err != nil {
					t.Fatal(err)
				}
				db := importerstest.Store(t)
				for _, s := range ss {
					if i == 1 {
						s = importerstest.Replay(s)
					}
					id, err := importers.Write(ctx, db, s)
					if err != nil {
						t.Fatal(err)
					}
					dumps[i] += importerstest.StoredRun(t, db, id, nil)
				}
			}
			if dumps[0] != dumps[1] {
				t.Errorf("the replayed session records another run:\ntree:\n%s\nlive:\n%s", dumps[0], dumps[1])
			}
		})
	}
}
