package geminicli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/geminicli"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// TestStoredRun_Generated: generated 2 MB sessions (importerstest.BigGemini:
// responses written again as they grow, parallel reads, invoke_agent
// sub-agents with their own chats, compressions, a resume; and
// BigGeminiJSON, the single-JSON file of earlier versions) record the run
// they recorded when chats were read whole (the goldens' digests were
// written by that importer), through the stream and through Read's tree
// alike.
func TestStoredRun_Generated(t *testing.T) {
	for name, gen := range map[string]func(string, int64) (string, error){"big-2MB": importerstest.BigGemini, "big-json-2MB": importerstest.BigGeminiJSON} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := gen(dir, 2<<20)
			if err != nil {
				t.Fatal(err)
			}
			importerstest.SameStoredRun(t, name, geminicli.Format{}, path, dir, true)
			importerstest.StreamAndTree(t, geminicli.Format{}, path)
		})
	}
}

// TestStream_FileChanged: a chat cut short between the first pass and the
// second (a session file replaced while it was imported) fails the import
// with an error that says so, for both formats, instead of recording
// another run than the one the first pass read.
func TestStream_FileChanged(t *testing.T) {
	for name, gen := range map[string]func(string, int64) (string, error){"jsonl": importerstest.BigGemini, "json": importerstest.BigGeminiJSON} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path, err := gen(dir, 256<<10)
			if err != nil {
				t.Fatal(err)
			}
			sf, ok := any(geminicli.Format{}).(importers.Streamer)
			if !ok {
				t.Fatal("gemini-cli does not stream its sessions")
			}
			ss, err := sf.Stream(context.Background(), path, importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ss[0].Close()
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, info.Size()/2); err != nil {
				t.Fatal(err)
			}
			_, err = importers.Write(context.Background(), importerstest.Store(t), ss[0])
			if err == nil || !strings.Contains(err.Error(), path+" changed while it was read") {
				t.Errorf("import of a file cut short after its first pass: %v", err)
			}
		})
	}
}

// TestSingleJSON_AsUnmarshalReadsIt: the token decoder takes a single-JSON
// file as json.Unmarshal into the header took it when the file was read
// whole: the last "messages" key counts (null: none), keys match
// case-insensitively, the header's fields may follow the list, and a file
// that is not one JSON object of the right types is no session.
func TestSingleJSON_AsUnmarshalReadsIt(t *testing.T) {
	const (
		head = `{` + "\n" + `"sessionId": "s1", "projectHash": "h", "startTime": "2025-01-01T00:00:00.000Z",` + "\n"
		ask  = `{"id": "u1", "timestamp": "2025-01-01T00:00:01.000Z", "type": "user", "content": "first"}`
		ask2 = `{"id": "u2", "timestamp": "2025-01-01T00:00:02.000Z", "type": "user", "content": "second"}`
		ans  = `{"id": "g1", "timestamp": "2025-01-01T00:00:03.000Z", "type": "gemini", "content": "done", "model": "gemini-2.5-pro"}`
	)
	for _, c := range []struct {
		name, file string
		tasks      string // the session's tasks, or the error's end
		title      string
	}{
		{"the last list counts", head + `"messages": [` + ask + `, ` + ans + `],` + "\n" + `"messages": [` + ask2 + `, 7, {"id": "x"}, ` + ans + `]}`, "second", ""},
		{"a null list after one", head + `"messages": [` + ask + `, ` + ans + `],` + "\n" + `"messages": null}`, "", ""},
		{"keys any case, fields after", "{\n" + `"Messages": [` + ask + `, ` + ans + `], "SESSIONID": "s1", "summary": "the title"}`, "first", "the title"},
		{"after the object", head + `"messages": [` + ask + `]}` + "\n{}", "not a Gemini CLI session", ""},
		{"a list that is an object", head + `"messages": {}}`, "not a Gemini CLI session", ""},
		{"a field of another type", "{\n" + `"sessionId": 5, "messages": []}`, "not a Gemini CLI session", ""},
		{"no session id", "{\n" + `"messages": [` + ask + `]}`, "not a Gemini CLI session", ""},
		{"cut short", head + `"messages": [` + ask + `, `, "not a Gemini CLI session", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "session-old.json")
			if err := os.WriteFile(p, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			ss, err := geminicli.Format{}.Read(context.Background(), p, importers.Options{})
			if err != nil {
				if !strings.HasSuffix(err.Error(), c.tasks) {
					t.Errorf("error %v, want one ending %q", err, c.tasks)
				}
				return
			}
			s := ss[0]
			if got := strings.Join(s.Tasks, ","); got != c.tasks || s.Title != c.title {
				t.Errorf("tasks %q, title %q; want %q, %q", got, s.Title, c.tasks, c.title)
			}
		})
	}
}
