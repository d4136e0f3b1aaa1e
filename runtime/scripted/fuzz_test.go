package scripted

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds script.yaml texts to the parser and plays the first
// reply of the trunk: it never panics, a parsed script gives a reply or an
// error naming the script, and a reply's numbers stay within bounds. The
// seeds are every fixture's script. Run it with:
// go test ./runtime/scripted -fuzz FuzzParse
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../../fixtures/*/script.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b))
		}
	}
	f.Add(script)
	f.Add("task: t\nconversations:\n  trunk:\n    - {say: x, usage: {in: 9223372036854775807}, latency: 2562047h}\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Parse("script.yaml", []byte(text))
		if err != nil {
			return
		}
		resp, err := New(s).Complete(context.Background(), req("", "go"))
		if err != nil {
			return
		}
		if resp.Latency < 0 || resp.Latency > MaxLatency || resp.ToolLatency < 0 || resp.ToolLatency > MaxLatency {
			t.Fatalf("latency %s / %s out of bounds:\n%s", resp.Latency, resp.ToolLatency, text)
		}
		if resp.Usage.In < 0 || resp.Usage.Out < 0 || resp.Usage.Cached < 0 {
			t.Fatalf("negative usage %+v:\n%s", resp.Usage, text)
		}
	})
}
