package claudecode_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/chat"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/claudecode"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/record"
)

// TestAgents_ExactRequests: the sessions of the real Claude Code the
// harness ran (testdata/agents/claude, or INSPECT_AGENTS_OUT) keep each
// call's request as api-request records. The import rebuilds each one,
// and the rebuilt body with the metadata.user_id the server logged put
// back is the body the server received, byte for byte: its SHA-256 is the
// log's body_sha256. Every call the server answered is rebuilt, unless
// its conversation's file keeps no api-request record (a fork's) or it is
// a compaction's (the session keeps its summary only). The run
// then lacks only metadata.user_id, and the prompt-cache analysis reads
// every call's real prompt.
func TestAgents_ExactRequests(t *testing.T) {
	root := importerstest.AgentsRoot(t)
	for _, run := range importerstest.AgentsRuns(t, root, "claude") {
		t.Run(run.Scenario, func(t *testing.T) {
			sent := map[string]importerstest.LogEntry{} // body_sha256 -> entry
			users := map[string]bool{}
			for _, e := range run.Log {
				sent[e.BodySHA256] = e
				if e.UserID != "" {
					users[e.UserID] = true
				}
			}
			if len(users) == 0 {
				t.Skip("the server's log names no metadata.user_id (a log older than the harness recording it)")
			}
			mains := run.Session("*/*.jsonl")
			if len(mains) == 0 {
				t.Fatal("no session file")
			}
			ctx := context.Background()
			db := importerstest.Store(t)
			res, err := importers.Import(ctx, db, claudecode.Format{}, mains[0], importers.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g, err := graph.Load(ctx, db, res[0].RunID)
			if err != nil {
				t.Fatal(err)
			}
			matched := map[string]bool{}
			rebuilt := 0
			for _, n := range g.Nodes {
				if n.Kind != record.KindLLM {
					continue
				}
				body, err := db.Request(ctx, g.ID, n.Seq)
				if err != nil {
					t.Fatal(err)
				}
				if f, _ := chat.Detect(body); f != chat.Anthropic {
					continue // reconstructed from the transcript
				}
				rebuilt++
				found := ""
				for u := range users {
					if sum := sha256hex(withUserID(t, body, u)); sent[sum].BodySHA256 != "" {
						found = sum
					}
				}
				if found == "" {
					t.Errorf("%s: the rebuilt request (%d bytes) is no body the server received", n.ID(), len(body))
					continue
				}
				matched[found] = true
			}
			// Every call answered is rebuilt, but for a conversation whose
			// file keeps no api-request record and the compaction's own
			// call (the session keeps its summary, not its request).
			keeps := keepsRequests(t, run)
			for _, e := range run.Log {
				if !matched[e.BodySHA256] && e.Status == 200 && !e.Side && !e.Compact && keeps(e.Agent) {
					t.Errorf("request %d (%s step %d, agent %q) was not rebuilt", e.Seq, e.Conv, e.Step, e.Agent)
				}
			}
			if rebuilt == 0 {
				t.Fatal("no request rebuilt")
			}
			lack := strings.Join(g.Options.RequestsLack, "; ")
			if !strings.Contains(lack, "metadata.user_id") || (len(matched) == len(run.Log) && len(g.Options.RequestsLack) != 1) {
				t.Errorf("the run lacks %q", lack)
			}
			// The prompt-cache analysis compares the real prompts.
			rep, err := cache.Analyze(ctx, g, db, nil)
			if err != nil {
				t.Fatal(err)
			}
			analyzed := 0
			for _, c := range rep.Calls {
				if c.Analyzed {
					analyzed++
				}
			}
			if analyzed < rebuilt {
				t.Errorf("the cache analysis read %d of the %d rebuilt requests", analyzed, rebuilt)
			}
		})
	}
}

// withUserID is a rebuilt body with metadata.user_id put back where
// Claude Code writes it: after tools (or system).
func withUserID(t *testing.T, body []byte, userID string) []byte {
	t.Helper()
	var members []json.RawMessage // "key":value pieces, in order
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %.80s", body)
	}
	after := ""
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		key, _ := json.Marshal(k)
		members = append(members, append(append(key, ':'), v...))
		if k == "tools" || (k == "system" && after == "") {
			after = k.(string)
		}
	}
	meta, _ := json.Marshal(map[string]string{"user_id": userID})
	var out []byte
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, m...)
		if bytes.HasPrefix(m, []byte(`"`+after+`":`)) {
			out = append(append(out, `,"metadata":`...), meta...)
		}
	}
	return append(out, '}')
}

// keepsRequests reports, by the agent id a request carried ("" for the
// main agent), whether that conversation's file keeps api-request records.
func keepsRequests(t *testing.T, run *importerstest.AgentsRun) func(agent string) bool {
	t.Helper()
	files := map[string]string{}
	for _, p := range run.Session("*/*.jsonl") {
		files[""] = p
	}
	for _, p := range run.Session("*/*/subagents/agent-*.jsonl") {
		files[strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "agent-"), ".jsonl")] = p
	}
	return func(agent string) bool {
		b, err := os.ReadFile(files[agent])
		return err == nil && bytes.Contains(b, []byte(`"type":"api-request"`))
	}
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
