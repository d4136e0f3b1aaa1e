package all_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestTextCap_FromOptions imports every fixture and real sample of every
// format whose texts the importer caps (OTLP's values have the receiver's
// own cap) under Options.MaxText 4 (the real Kimi Code sample's texts are
// short), and requires every text a step or branch keeps to be at most 4
// bytes, or its first 4 with the cut
// marked ("…" and "[N more bytes not imported]", N the bytes left out);
// each source must have had texts to cut, so the cap is one place, the
// Options, whatever the format.
func TestTextCap_FromOptions(t *testing.T) {
	const max = 4
	_, paths := fixtures(t)
	real := importerstest.Transcripts(t)
	for _, rel := range []string{"kimi-code/sample-main", "kimi-cli/with-tool-calls", "kimi-cli/with-subagent-collapsed",
		"claude-code/ae4a77f8-aedd-4bc1-888f-c94edc91af04.lines-43-102.jsonl", "claude-code/tool_heavy.jsonl"} {
		paths = append(paths, filepath.Join(real, filepath.FromSlash(rel)))
	}
	opt := importers.Options{MaxText: max}
	for _, p := range paths {
		f := detect(t, p)
		if f.Name() == "otlp" {
			continue
		}
		t.Run(f.Name()+"/"+filepath.Base(p), func(t *testing.T) {
			ss, err := f.Read(context.Background(), p, opt)
			if err != nil {
				t.Fatal(err)
			}
			cut := 0
			check := func(where, s string) {
				if len(s) <= max {
					return
				}
				head, note, ok := strings.Cut(s, "…\n[")
				var n int
				_, err := fmt.Sscanf(note, "%d more bytes", &n)
				if !ok || len(head) > max || !strings.HasSuffix(note, " more bytes not imported]") || err != nil || n <= 0 {
					t.Errorf("%s: %d bytes, not cut to %d: %.80q", where, len(s), max, s)
					return
				}
				cut++
			}
			for _, s := range ss {
				walk(s.Trunk, check)
			}
			if cut == 0 {
				t.Error("no text was cut: the source has none longer than the cap")
			}
		})
	}
}

// walk calls check with every text c's steps and branches keep.
func walk(c *importers.Conversation, check func(where, s string)) {
	if c == nil {
		return
	}
	for i, st := range c.Steps {
		at := func(what string) string { return fmt.Sprintf("%s step %d %s", c.Agent, i, what) }
		switch {
		case st.User != nil:
			check(at("user"), st.User.Text)
		case st.LLM != nil:
			check(at("llm content"), st.LLM.Content)
		case st.Tool != nil:
			check(at("tool args"), st.Tool.Args)
			check(at("tool result"), st.Tool.Result)
		case st.Compact != nil:
			check(at("compaction"), st.Compact.Summary)
		case st.Final != nil:
			check(at("final"), st.Final.Text)
		case st.Fork != nil:
			for _, b := range st.Fork.Branches {
				check(at("branch instructions"), b.Instructions)
				check(at("branch args"), b.Args)
				check(at("branch answer"), b.Answer)
				walk(b.Conv, check)
			}
		}
	}
}
