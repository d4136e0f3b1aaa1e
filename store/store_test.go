package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func openTemp(t testing.TB) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "runs.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

func newRun(t testing.TB, db *DB) *Recorder {
	t.Helper()
	rec, err := db.CreateRun(context.Background(), &record.Run{
		Started: t0,
		Tasks:   []string{"Compare Q3 revenue"},
		Project: record.Project{Name: "demo", Files: []record.File{{Path: "agents.yaml", Content: "agents: []\n"}, {Path: "agents/analyst.md", Content: "You analyse.\n"}}},
		Options: record.Options{Runtime: &record.RuntimeOptions{MaxForkDepth: 2, MaxSteps: 40}},
		BaseURL: "https://user:secret@api.example.com/v1",
		Models:  []string{"m2", "m1"},
		Source:  record.Source{Format: "claude-code", Version: "2.1.3", ID: "3f2c", Path: "https://u:pw@example.com/s.jsonl"},
	})
	if err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return rec
}

// everyKind returns one finished node of each kind, fully populated.
func everyKind() []*record.Node {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	return []*record.Node{
		{Kind: record.KindUser, Agent: "analyst", Started: at(0), Ended: at(0), Text: "Compare Q3 revenue"},
		{Kind: record.KindLLM, Agent: "analyst", Started: at(0), Ended: at(1), LLM: &record.LLM{Model: "m1", Calls: []string{"read_file", "fork"},
			Usage: record.Usage{In: 1210, Out: 31, Cached: 1000, CachedReported: true}, Content: "let me look",
			Request:  []byte(`{"model":"m1","messages":[{"role":"system","content":"s"},{"role":"user","content":"q"}],"tools":[]}`),
			Response: []byte(`{"id":"x","choices":[]}`)}},
		{Kind: record.KindTool, Agent: "analyst", Started: at(1), Ended: at(2), CalledBy: 2, Tool: &record.Tool{CallID: "c1", Name: "read_file", Args: `{"path":"a.md"}`, Result: "hello", Research: true}},
		{Kind: record.KindFork, Agent: "analyst", Started: at(2), Ended: at(2), CalledBy: 2, Fork: &record.Fork{Context: "compact", Branches: []record.ForkBranch{{Name: "eu", Agent: "researcher", Instructions: "EU total"}}}},
		{Kind: record.KindLLM, Branch: "eu", ForkSeq: 4, Depth: 1, Agent: "researcher", Started: at(2), Ended: at(5), Status: record.StatusError, Error: "provider returned 500",
			LLM: &record.LLM{Model: "m2", Usage: record.Usage{In: 10, Out: 0}}},
		{Kind: record.KindLLM, Branch: "eu", ForkSeq: 4, Depth: 1, Agent: "researcher", Started: at(5), Ended: at(5), Status: record.StatusExhausted,
			LLM: &record.LLM{Model: "m2", Fidelity: record.FidelityReconstructed, Usage: record.Usage{In: 40, Out: 9, Cached: 0, CachedReported: true,
				CacheWrite: 30, CacheWriteReported: true, Reasoning: 5, ReasoningReported: true}}},
		{Kind: record.KindFinal, Branch: "eu", ForkSeq: 4, Depth: 1, Agent: "researcher", Started: at(5), Ended: at(5), Status: record.StatusError, Error: "provider returned 500"},
		{Kind: record.KindJoin, Agent: "analyst", Started: at(5), Ended: at(5), Join: &record.Join{ForkSeq: 4, Branches: []record.JoinBranch{{Name: "eu", Agent: "researcher", Status: record.StatusError, Duration: 3 * time.Second, Answer: "provider returned 500"}}}},
		{Kind: record.KindHandoff, Agent: "analyst", Started: at(6), Ended: at(6), Handoff: &record.Handoff{From: "analyst", To: "billing", Reason: "invoice question"}},
		{Kind: record.KindFinal, Agent: "billing", Started: at(7), Ended: at(7), Text: "EU 4.2M"},
	}
}

func TestRoundTrip_EveryKind(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	want := everyKind()
	for i, n := range want {
		if i%2 == 0 {
			if err := rec.AddNode(ctx, n); err != nil {
				t.Fatal(err)
			}
			continue
		}
		ended, status := n.Ended, n.Status
		n.Ended, n.Status = time.Time{}, ""
		if err := rec.StartNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.Ended, n.Status = ended, status
		if err := rec.FinishNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Finish(ctx, record.StatusOK, "", t0.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
	run, err := db.LoadRun(ctx, rec.RunID())
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != record.StatusOK || !run.Ended.Equal(t0.Add(8*time.Second)) || run.Tasks[0] != "Compare Q3 revenue" {
		t.Errorf("run = %+v", run)
	}
	if run.BaseURL != "https://api.example.com/v1" {
		t.Errorf("BaseURL = %q, want credentials removed", run.BaseURL)
	}
	if run.Source != (record.Source{Format: "claude-code", Version: "2.1.3", ID: "3f2c", Path: "https://example.com/s.jsonl"}) {
		t.Errorf("Source = %+v, want it kept with credentials removed", run.Source)
	}
	if !reflect.DeepEqual(run.Models, []string{"m1", "m2"}) {
		t.Errorf("Models = %v", run.Models)
	}
	if f := run.Project.File("agents/analyst.md"); f == nil || f.Content != "You analyse.\n" || len(f.SHA256) != 64 {
		t.Errorf("project file = %+v", f)
	}
	var got []*record.Node
	if err := db.ScanNodes(ctx, run, func(n *record.Node) error { got = append(got, n); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d nodes, want %d", len(got), len(want))
	}
	for i := range want {
		w := *want[i]
		if w.LLM != nil { // bodies are loaded separately
			l := *w.LLM
			l.Request, l.Response = nil, nil
			w.LLM = &l
		}
		g := got[i]
		if w.Seq != int64(i+1) || g.Seq != w.Seq {
			t.Errorf("node %d: Seq = %d, want %d", i, g.Seq, i+1)
		}
		g.Started, g.Ended = g.Started.UTC(), g.Ended.UTC()
		w.Started, w.Ended = w.Started.UTC(), w.Ended.UTC()
		if w.Status == "" {
			w.Status = record.StatusOK
		}
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(&w)
		if !bytes.Equal(gj, wj) {
			t.Errorf("%s node round trip:\n got %s\nwant %s", w.Kind, gj, wj)
		}
	}
	req, err := db.Request(ctx, run.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(req, want[1].LLM.Request) {
		t.Errorf("Request = %s, want %s", req, want[1].LLM.Request)
	}
	resp, err := db.Response(ctx, run.ID, 2)
	if err != nil || string(resp) != `{"id":"x","choices":[]}` {
		t.Errorf("Response = %s, %v", resp, err)
	}
	if _, err := db.Request(ctx, run.ID, 3); !errors.Is(err, ErrNoRequest) {
		t.Errorf("Request of a tool node: err = %v, want ErrNoRequest", err)
	}
}

func TestStartNode_VisibleWhileOpen(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	n := &record.Node{Kind: record.KindLLM, Agent: "a", Started: t0, LLM: &record.LLM{Model: "m", Request: []byte(`{"messages":[{"role":"user","content":"x"}]}`)}}
	if err := rec.StartNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	run, _ := db.LoadRun(ctx, rec.RunID())
	got, err := db.Node(ctx, run, n.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != record.StatusRunning || !got.Ended.IsZero() {
		t.Errorf("open node: Status = %q, Ended = %v; want running, zero", got.Status, got.Ended)
	}
	if _, err := db.Request(ctx, run.ID, n.Seq); err != nil {
		t.Errorf("request of an open call: %v", err)
	}
	if err := rec.FinishNode(ctx, &record.Node{Seq: 99, Kind: record.KindTool, Tool: &record.Tool{}}); err == nil || !strings.Contains(err.Error(), "never started") {
		t.Errorf("finishing an unknown node: err = %v", err)
	}
	if err := rec.Finish(ctx, record.StatusCancelled, "interrupted by the user", time.Time{}); err != nil {
		t.Fatal(err)
	}
	got, _ = db.Node(ctx, run, n.Seq)
	if got.Status != record.StatusCancelled {
		t.Errorf("open node after a cancelled run: Status = %q, want cancelled", got.Status)
	}
}

// A recording transaction that fails half-way (its second statement, or
// its first) leaves nothing of itself and the writer usable: the next
// transactions commit, and the open call they finish reads back whole.
func TestRecorder_FailedWriteRollsBack(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	reqs, resps := conversationWithResponses(2)
	n := &record.Node{Kind: record.KindLLM, Started: t0, LLM: &record.LLM{Model: "gpt-4.1-mini", Request: reqs[0]}}
	if err := rec.StartNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	// The same seq again: its first statement fails.
	dup := &record.Node{Seq: n.Seq, Kind: record.KindLLM, Started: t0, LLM: &record.LLM{Model: "gpt-4.1-mini", Request: reqs[1]}}
	if err := rec.StartNode(ctx, dup); err == nil {
		t.Fatal("a second node with the same seq was recorded")
	}
	// A call never started, with a response: the transaction fails after BEGIN.
	if err := rec.FinishNode(ctx, &record.Node{Seq: 99, Kind: record.KindLLM, LLM: &record.LLM{Response: resps[1]}}); err == nil || !strings.Contains(err.Error(), "never started") {
		t.Fatalf("finishing an unknown call: err = %v", err)
	}
	n.LLM.Response = resps[0]
	if err := rec.FinishNode(ctx, n); err != nil {
		t.Fatalf("FinishNode after failed writes: %v", err)
	}
	next := &record.Node{Kind: record.KindLLM, Started: t0, Ended: t0, LLM: &record.LLM{Model: "gpt-4.1-mini", Request: reqs[1], Response: resps[1]}}
	if err := rec.AddNode(ctx, next); err != nil {
		t.Fatalf("AddNode after failed writes: %v", err)
	}
	for i, seq := range []int64{n.Seq, next.Seq} {
		if got, err := db.Request(ctx, rec.RunID(), seq); err != nil || !bytes.Equal(got, reqs[i]) {
			t.Errorf("request of n%d = %.60q, %v", seq, got, err)
		}
		if got, err := db.Response(ctx, rec.RunID(), seq); err != nil || !bytes.Equal(got, resps[i]) {
			t.Errorf("response of n%d = %.60q, %v", seq, got, err)
		}
	}
	if k, err := db.CountRows(ctx, "requests"); err != nil || k != 2 {
		t.Errorf("%d request rows (%v), want 2: a failed write left one", k, err)
	}
	if v, err := db.IntegrityCheck(ctx); err != nil || v != "ok" {
		t.Errorf("integrity_check = %q, %v", v, err)
	}
}

// conversation builds the requests of an n-step conversation the way a
// provider sees them: each request repeats every earlier message.
func conversation(n int) (reqs [][]byte, transcript int) {
	reqs, resps := conversationWithResponses(n)
	transcript = len(reqs[len(reqs)-1])
	for _, r := range resps {
		transcript += len(r)
	}
	return reqs, transcript
}

// conversationWithResponses also returns each step's response body. The
// transcript of the conversation is its last request (every message once)
// plus every response.
func conversationWithResponses(n int) (reqs, resps [][]byte) {
	tools := `[{"type":"function","function":{"name":"read_file","description":"Read a file of the workspace.","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`
	msgs := []string{`{"role":"system","content":"You are the analyst. Read the regional reports and answer."}`,
		`{"role":"user","content":"Compare Q3 revenue across EU, US and APAC"}`}
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"model":"gpt-4.1-mini","messages":[%s],"tools":%s,"stream":false}`, strings.Join(msgs, ","), tools)
		reqs = append(reqs, []byte(body))
		resps = append(resps, []byte(fmt.Sprintf(`{"id":"chatcmpl-%d","object":"chat.completion","created":1764496800,"model":"gpt-4.1-mini","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"regions/r%d.md\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":%d,"completion_tokens":21,"total_tokens":%d}}`, i, i, i, len(body)/4, len(body)/4+21)))
		msgs = append(msgs,
			fmt.Sprintf(`{"role":"assistant","tool_calls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"regions/r%d.md\"}"}}]}`, i, i),
			fmt.Sprintf(`{"role":"tool","tool_call_id":"call_%d","content":"Region %d: revenue %d.%dM, up %d%% on Q2; the largest account renewed early."}`, i, i, i%9, i%7, i%13))
	}
	return reqs, resps
}

func TestRequests_500Steps_RebuildAndLinearStorage(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	rec := newRun(t, db)
	reqs, resps := conversationWithResponses(500)
	transcript := len(reqs[len(reqs)-1])
	for i, body := range reqs {
		transcript += len(resps[i])
		n := &record.Node{Kind: record.KindLLM, Agent: "analyst", Started: t0.Add(time.Duration(i) * time.Second), LLM: &record.LLM{Model: "gpt-4.1-mini", Request: body}}
		if err := rec.StartNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.LLM.Calls = []string{"read_file"}
		n.LLM.Response = resps[i]
		n.LLM.Usage = record.Usage{In: int64(len(body) / 4), Out: 21}
		if err := rec.FinishNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		tool := &record.Node{Kind: record.KindTool, Agent: "analyst", Started: n.Ended, Tool: &record.Tool{CallID: fmt.Sprintf("call_%d", i), Name: "read_file",
			Args: fmt.Sprintf(`{"path":"regions/r%d.md"}`, i), Result: fmt.Sprintf("Region %d: revenue %d.%dM, up %d%% on Q2; the largest account renewed early.", i, i%9, i%7, i%13), Research: true}}
		if err := rec.AddNode(ctx, tool); err != nil {
			t.Fatal(err)
		}
	}
	for i, body := range reqs {
		got, err := db.Request(ctx, rec.RunID(), int64(2*i+1))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, body) {
			t.Fatalf("request %d rebuilt to %d bytes that differ from the %d sent", i+1, len(got), len(body))
		}
	}
	if _, err := db.w.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	size := fileSize(t, path) + fileSize(t, path+"-wal")
	var sent int
	for _, r := range reqs {
		sent += len(r)
	}
	// The 500 tool-call steps' results are recorded too, as a runtime would.
	t.Logf("500 steps: transcript (last request + every response) %d bytes, sent %d bytes in all, database %d bytes (%.2f× transcript)", transcript, sent, size, float64(size)/float64(transcript))
	if size > 3*int64(transcript) {
		t.Errorf("database is %d bytes, more than 3× the %d-byte transcript", size, transcript)
	}
}

func TestRequest_DamagedIsRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}],"tools":[]}`)
	if err := rec.AddNode(ctx, &record.Node{Kind: record.KindLLM, Started: t0, LLM: &record.LLM{Request: body}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE chain SET data = CAST('{"role":"user","content":"HELLO"}' AS BLOB) WHERE data = CAST('{"role":"user","content":"hello"}' AS BLOB)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Request(ctx, rec.RunID(), 1); err == nil || !strings.Contains(err.Error(), "does not match its stored hash") {
		t.Errorf("damaged request: err = %v, want a hash mismatch", err)
	}
}

func TestSplitRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		msgs int
	}{
		{"compact", `{"model":"m","messages":[{"a":1},{"b":[1,2]}],"tools":[]}`, 2},
		{"spaced", "{ \"messages\" : [ {\"a\":1} ,\n {\"b\":\"]\"} ] , \"x\":1 }", 2},
		{"messages last", `{"model":"m","messages":[{"a":1}]}`, 1},
		{"empty messages", `{"messages":[]}`, 0},
		{"no messages", `{"model":"m"}`, 0},
		{"not json", `hello`, 0},
		{"array", `[1,2]`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			head, msgs, tail := splitRequest([]byte(tt.body))
			if len(msgs) != tt.msgs {
				t.Errorf("len(msgs) = %d, want %d", len(msgs), tt.msgs)
			}
			joined := append(append([]byte{}, head...), bytes.Join(msgs, nil)...)
			if got := string(append(joined, tail...)); got != tt.body {
				t.Errorf("pieces join to %q, want %q", got, tt.body)
			}
		})
	}
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	const writers, each = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				n := &record.Node{Kind: record.KindLLM, Branch: fmt.Sprintf("b%d", w), Agent: "a", Started: t0,
					LLM: &record.LLM{Model: "m", Request: []byte(fmt.Sprintf(`{"messages":[{"role":"system","content":"shared"},{"role":"user","content":"w%d i%d"}]}`, w, i))}}
				if err := rec.StartNode(ctx, n); err != nil {
					errs <- err
					return
				}
				if err := rec.FinishNode(ctx, n); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	run, _ := db.LoadRun(ctx, rec.RunID())
	seen := map[int64]bool{}
	if err := db.ScanNodes(ctx, run, func(n *record.Node) error {
		if seen[n.Seq] {
			return fmt.Errorf("seq n%d twice", n.Seq)
		}
		seen[n.Seq] = true
		if n.Status != record.StatusOK {
			return fmt.Errorf("n%d status %s", n.Seq, n.Status)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*each {
		t.Errorf("%d nodes recorded, want %d", len(seen), writers*each)
	}
	var shared int
	if err := db.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM blobs WHERE data = CAST('{"role":"system","content":"shared"}' AS BLOB))
		+ (SELECT count(*) FROM chain WHERE data = CAST('{"role":"system","content":"shared"}' AS BLOB))`).Scan(&shared); err != nil || shared != 1 {
		t.Errorf("shared system message stored %d times (err %v), want once", shared, err)
	}
}

func TestOpen_RefusesNonDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.db")
	if err := os.WriteFile(path, []byte("these are my notes, not a database\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), path)
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "not a SQLite database") || !strings.Contains(err.Error(), "--db") {
		t.Errorf("Open(text file) err = %v, want a SchemaError that says what to do", err)
	}
	got, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(got), "these are my notes") {
		t.Errorf("the refused file was changed")
	}
}

func TestOpen_RefusesFolder(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(context.Background(), dir)
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "a folder, not a database file") || !strings.Contains(err.Error(), filepath.Join(dir, "runs.db")) {
		t.Errorf("Open(folder) = %v, want a SchemaError saying it is a folder and suggesting %s", err, filepath.Join(dir, "runs.db"))
	}
}

func TestOpen_RefusesOtherProgramsDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := openRaw(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE customers (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "another program") {
		t.Errorf("Open(other db) err = %v, want refusal", err)
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	if _, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", SchemaVersion()+1)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err := Open(ctx, path)
	var se *SchemaError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "newer inspect") || !strings.Contains(err.Error(), "upgrade inspect") {
		t.Errorf("Open(newer) err = %v, want a SchemaError with advice", err)
	}
}

// migratedFile writes a file of schema version with rows in that
// version's own SQL (this build's recorder writes the current schema), then
// opens it as a writer does: migrated to the current schema.
func migratedFile(t *testing.T, version int, rows ...string) *DB {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	old, err := open(ctx, path, version)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := old.Version(ctx); v != version {
		t.Fatalf("old file at v%d, want v%d", v, version)
	}
	for _, q := range rows {
		if _, err := old.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpen_MigratesPreviousVersion(t *testing.T) {
	ctx := context.Background()
	// v3's rows: project files inline
	db := migratedFile(t, 3,
		`INSERT INTO runs (id, started_ns, status, tasks) VALUES ('oldrun', 1, 'ok', '["go"]')`,
		`INSERT INTO project_files (run_id, path, sha256, content) VALUES ('oldrun', 'agents.yaml', '', 'agents: []')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, text) VALUES ('oldrun', 1, 'user', 1, 2, 'ok', 'kept')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name, tokens_in, tokens_out, tokens_cached) VALUES ('oldrun', 2, 'llm', 2, 3, 'ok', 'm', 10, 2, 4)`)
	if v, _ := db.Version(ctx); v != SchemaVersion() {
		t.Errorf("after Open: v%d, want v%d", v, SchemaVersion())
	}
	run, err := db.LoadRun(ctx, "oldrun")
	if err != nil {
		t.Fatal(err)
	}
	if run.Source.Format != record.SourceInspect || len(run.Project.Files) != 1 || run.Tasks[0] != "go" {
		t.Errorf("run after migration = %+v, want source inspect, its snapshot and task kept", run)
	}
	if f := run.Project.Files; len(f) != 1 || f[0].Path != "agents.yaml" || f[0].Content != "agents: []" {
		t.Errorf("project files after migration = %+v, want agents.yaml with its content", f)
	}
	var totalNodes, totalLLM, totalIn int64
	if err := db.r.QueryRowContext(ctx, `SELECT totals_nodes, totals_llm, totals_in FROM runs WHERE id='oldrun'`).Scan(&totalNodes, &totalLLM, &totalIn); err != nil ||
		totalNodes != 2 || totalLLM != 1 || totalIn != 10 {
		t.Errorf("totals after migration = %d nodes, %d llm, %d in (%v); want 2, 1, 10 written for the finished run", totalNodes, totalLLM, totalIn, err)
	}
	n, err := db.Node(ctx, run, 1)
	if err != nil || n.Text != "kept" {
		t.Errorf("node after migration = %+v, %v", n, err)
	}
	llm, err := db.Node(ctx, run, 2)
	if err != nil || llm.LLM.Usage != (record.Usage{In: 10, Out: 2, Cached: 4, CachedReported: true}) || !llm.LLM.Exact() {
		t.Errorf("llm node after migration = %+v, %v: usage kept, nothing new reported, request exact", llm.LLM, err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE runs SET status='exhausted' WHERE id='oldrun'`); err != nil {
		t.Errorf("status exhausted refused after migration: %v", err)
	}
	if err := db.AddAsk(ctx, &Ask{RunID: run.ID, NodeSeq: 1, Mode: "question", Question: "why?"}); err != nil {
		t.Errorf("the migrated table is missing: %v", err)
	}
}

func TestResolveRun(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	if _, err := db.ResolveRun(ctx, "latest"); !errors.Is(err, ErrNoRuns) {
		t.Errorf("latest of empty db: err = %v", err)
	}
	for i, id := range []string{"abc111", "abc222", "def333"} {
		if _, err := db.CreateRun(ctx, &record.Run{ID: id, Started: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		ref, want, err string
	}{
		{"latest", "def333", ""},
		{"", "def333", ""},
		{"abc111", "abc111", ""},
		{"d", "def333", ""},
		{"abc", "", `"abc" matches 2 runs (abc222, abc111)`},
		{"zzz", "", `no run matches "zzz"; recent runs: def333, abc222, abc111`},
	}
	for _, tt := range tests {
		got, err := db.ResolveRun(ctx, tt.ref)
		if got != tt.want || (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ResolveRun(%q) = %q, %v; want %q, %q", tt.ref, got, err, tt.want, tt.err)
		}
	}
}

func TestRuns_Summary(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	for _, n := range everyKind() {
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	rec.Finish(ctx, record.StatusOK, "", t0.Add(8*time.Second))
	runs, err := db.Runs(ctx, 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
	r := runs[0]
	if r.TokensIn != 1260 || r.TokensOut != 40 || r.LLMCalls != 3 || r.Nodes != 10 || r.Elapsed() != 8*time.Second {
		t.Errorf("summary = %+v", r)
	}
	if !reflect.DeepEqual(r.Agents, []string{"analyst", "researcher", "billing"}) {
		t.Errorf("Agents = %v", r.Agents)
	}
	// A newer run without nodes comes first, with zero sums; limit keeps the newest.
	if _, err := db.CreateRun(ctx, &record.Run{ID: "newer", Started: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	runs, err = db.Runs(ctx, 1)
	if err != nil || len(runs) != 1 || runs[0].ID != "newer" || runs[0].Nodes != 0 || runs[0].TokensIn != 0 || runs[0].Agents != nil {
		t.Errorf("Runs(limit 1) = %+v, %v; want only the newer, empty run", runs, err)
	}
}

// A run that never finished (killed: it reads interrupted) has no end time;
// its summary's elapsed time is up to the last recorded node's end, as the
// graph and the audit show it, not 0.
func TestRuns_OpenRunElapsedUpToLastNode(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	for _, n := range everyKind()[:6] {
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	runs, err := db.Runs(ctx, 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("Runs = %v, %v", runs, err)
	}
	if got := runs[0].Elapsed(); got != 5*time.Second {
		t.Errorf("open run: Elapsed = %v, want 5s (up to the last node's end)", got)
	}
	if !runs[0].Ended.IsZero() {
		t.Errorf("open run: Ended = %v, want zero", runs[0].Ended)
	}
}

func TestAsks(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	a := &Ask{RunID: rec.RunID(), NodeSeq: 2, Mode: "question", Question: "why fork?", Answer: "because", Model: "m", BaseURL: "http://k:secret@localhost:1/v1"}
	if err := db.AddAsk(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := db.Asks(ctx, rec.RunID(), 2)
	if err != nil || len(got) != 1 || got[0].Answer != "because" || got[0].BaseURL != "http://localhost:1/v1" {
		t.Errorf("Asks = %+v, %v", got, err)
	}
	if got, _ := db.Asks(ctx, rec.RunID(), 3); len(got) != 0 {
		t.Errorf("Asks of another node = %+v", got)
	}
}

// A model call's attempts and an ask's incompleteness are kept (schema
// v5), and a v4 file's rows read as one attempt and complete asks.
func TestAttemptsAndIncompleteAsks(t *testing.T) {
	ctx := context.Background()
	db := migratedFile(t, 4,
		`INSERT INTO runs (id, started_ns, ended_ns, status, tasks) VALUES ('v4run', 1, 3, 'ok', '["go"]')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name) VALUES ('v4run', 1, 'llm', 2, 3, 'ok', 'm')`,
		`INSERT INTO asks (run_id, node_seq, mode, answer, created_ns) VALUES ('v4run', 1, 'question', 'old', 1)`)
	rec2, err := db.CreateRun(ctx, &record.Run{Tasks: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	n := &record.Node{Kind: record.KindLLM, Status: record.StatusError, Error: "HTTP 429", LLM: &record.LLM{Model: "m", Attempts: 4, Request: []byte(`{"model":"m","messages":[]}`)}}
	if err := rec2.StartNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	n.LLM.Response = []byte(`{"error": {"message": "slow down"}}`)
	if err := rec2.FinishNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := db.AddAsk(ctx, &Ask{RunID: rec2.RunID(), NodeSeq: n.Seq, Mode: "question", Answer: "half", Incomplete: "the answer was cut off after 4 bytes"}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		run        string
		attempts   int
		incomplete string
	}{{"v4run", 0, ""}, {rec2.RunID(), 4, "the answer was cut off after 4 bytes"}} {
		run, err := db.LoadRun(ctx, tt.run)
		if err != nil {
			t.Fatal(err)
		}
		var got *record.Node
		if err := db.ScanNodes(ctx, run, func(n *record.Node) error { got = n; return nil }); err != nil || got == nil {
			t.Fatalf("ScanNodes: %v", err)
		}
		if got.LLM.Attempts != tt.attempts {
			t.Errorf("run %s: attempts %d, want %d", tt.run, got.LLM.Attempts, tt.attempts)
		}
		asks, err := db.Asks(ctx, tt.run, 0)
		if err != nil || len(asks) != 1 || asks[0].Incomplete != tt.incomplete {
			t.Errorf("run %s: asks %+v (%v), want one with incomplete %q", tt.run, asks, err, tt.incomplete)
		}
	}
	if resp, err := db.Response(ctx, rec2.RunID(), n.Seq); err != nil || !strings.Contains(string(resp), "slow down") {
		t.Errorf("the failed call's response body = %q, %v; want it kept", resp, err)
	}
}

// The llm node whose response made a call is kept (schema v7, CalledBy:
// TestRoundTrip_EveryKind), and the nodes of a v6 file read as not saying
// (0), whether the file is migrated by a writer or read through a
// reader's upgraded copy, which leaves it at v6.
func TestCalledBy_V6File(t *testing.T) {
	ctx := context.Background()
	rows := []string{
		`INSERT INTO runs (id, started_ns, ended_ns, status, tasks) VALUES ('v6run', 1, 4, 'ok', '["go"]')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name, calls) VALUES ('v6run', 1, 'llm', 1, 2, 'ok', 'm', 'Read Read')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name, call_id) VALUES ('v6run', 2, 'tool', 2, 3, 'ok', 'Read', 'c1')`,
		`INSERT INTO nodes (run_id, seq, kind, started_ns, ended_ns, status, name, call_id) VALUES ('v6run', 3, 'tool', 2, 4, 'ok', 'Read', 'c2')`,
	}
	path := filepath.Join(t.TempDir(), "v6.db")
	old, err := open(ctx, path, 6)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range rows {
		if _, err := old.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()
	check := func(db *DB, how string) {
		t.Helper()
		run, err := db.LoadRun(ctx, "v6run")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		if err := db.ScanNodes(ctx, run, func(nd *record.Node) error {
			n++
			if nd.CalledBy != 0 {
				t.Errorf("%s: n%d CalledBy %d, want 0", how, nd.Seq, nd.CalledBy)
			}
			return nil
		}); err != nil || n != 3 {
			t.Fatalf("%s: %d nodes, %v", how, n, err)
		}
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if ro.FileVersion != 6 {
		t.Errorf("read-only open: FileVersion %d, want 6", ro.FileVersion)
	}
	check(ro, "read-only")
	ro.Close()
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if v, _ := db.Version(ctx); v != SchemaVersion() || v < 7 {
		t.Errorf("after Open: v%d, want v%d (at least 7)", v, SchemaVersion())
	}
	check(db, "migrated")
}

func fileSize(t testing.TB, path string) int64 {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A database the user may not write (a read-only checkout, a mounted
// artifact) says what to do, not only "attempt to write a readonly database".
func TestOpen_ReadOnlySaysWhatToDo(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root ignores file permissions")
	}
	db, path := openTemp(t)
	db.Close()
	dir := filepath.Dir(path)
	os.Chmod(path, 0o444)
	os.Chmod(dir, 0o555)
	t.Cleanup(func() { os.Chmod(dir, 0o755); os.Chmod(path, 0o644) })
	_, err := Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "copy it somewhere writable") {
		t.Errorf("Open(read-only) = %v, want advice to copy it somewhere writable", err)
	}
}
