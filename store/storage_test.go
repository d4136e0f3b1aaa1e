package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// count returns the result of a count query on the reader pool.
func count(t *testing.T, db *DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.r.QueryRowContext(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A conversation whose requests extend each other, then change in every way
// the recorder must notice (a rewritten earlier message, another tail, a
// new system prompt after a hand-off, a body that is not a chat request),
// rebuilds byte for byte, each message stored once.
func TestRecorder_ExtendsConversation(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	msg := func(i int) string { return fmt.Sprintf(`{"role":"user","content":"step %d"}`, i) }
	body := func(system, tail string, msgs ...string) []byte {
		all := msgs
		if system != "" {
			all = append([]string{`{"role":"system","content":"` + system + `"}`}, msgs...)
		}
		return []byte(`{"model":"m","messages":[` + strings.Join(all, ",") + `]` + tail + `}`)
	}
	bodies := [][]byte{
		body("you analyse", `,"tools":[]`, msg(1)),
		body("you analyse", `,"tools":[]`, msg(1), msg(2)),
		body("you analyse", `,"tools":[]`, msg(1), msg(2), msg(3), msg(4)),
		body("you analyse", `,"tools":[{"type":"function"}]`, msg(1), msg(2), msg(3), msg(4), msg(5)),                          // another tail
		body("you bill", `,"tools":[]`, msg(1), msg(2), msg(3), msg(4), msg(5), msg(6)),                                        // a hand-off
		body("you bill", `,"tools":[]`, msg(1), msg(9), msg(3)),                                                                // an earlier message rewritten
		[]byte("{ \"model\" : \"m\" , \"messages\" : [ " + msg(1) + " , " + msg(9) + " , " + msg(3) + " , " + msg(4) + " ] }"), // spaced
		[]byte(`not a chat request`),
		body("", `,"tools":[]`, msg(1), msg(2)), // no system message
		body("", `,"tools":[]`, msg(1), msg(2), msg(3)),
	}
	for i, b := range bodies {
		n := &record.Node{Kind: record.KindLLM, Agent: "a", Started: t0, LLM: &record.LLM{Model: "m", Request: b}}
		if err := rec.StartNode(ctx, n); err != nil {
			t.Fatal(err)
		}
		n.LLM.Response = []byte(fmt.Sprintf(`{"id":"r%d"}`, i))
		if err := rec.FinishNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range bodies {
		got, err := db.Request(ctx, rec.RunID(), int64(i+1))
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("request %d rebuilt as\n%s\nwant\n%s", i+1, got, want)
		}
		resp, err := db.Response(ctx, rec.RunID(), int64(i+1))
		if err != nil || string(resp) != fmt.Sprintf(`{"id":"r%d"}`, i) {
			t.Errorf("response %d = %s, %v", i+1, resp, err)
		}
	}
	// The chain after a system prompt holds step 1..6 once (shared by both
	// agents), then 9 and 3 after 1 (the rewrite); the bodies without a
	// system message start a chain of their own at step 1.
	if got := count(t, db, `SELECT count(*) FROM chain WHERE data LIKE '%step 2%'`); got != 2 {
		t.Errorf("step 2 is in %d chain links, want 2 (after a system prompt, and first of a body without one)", got)
	}
	if got := count(t, db, `SELECT count(*) FROM blobs WHERE instr(data, 'you analyse') > 0`); got != 1 {
		t.Errorf("the system prompt is in %d blobs, want 1", got)
	}
	if got := count(t, db, `SELECT count(*) FROM chain WHERE data LIKE '%"system"%'`); got != 0 {
		t.Errorf("%d system messages in the shared chain, want none", got)
	}
}

// recordFork records a fork of eight inherit branches, each on agents[i]
// (its own system prompt), continuing a 100-message trunk, and returns the
// size of the stored requests and of one system prompt.
func recordFork(t *testing.T, agents []string) (size, prompt int) {
	t.Helper()
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	var trunk []string
	for i := 0; i < 100; i++ {
		trunk = append(trunk, fmt.Sprintf(`{"role":"tool","tool_call_id":"c%d","content":"Region %d: revenue %d.%dM, up %d%% on Q2; the largest account renewed early and paid in advance."}`, i, i, i%9, i%7, i%13))
	}
	for b, agent := range agents {
		system := `{"role":"system","content":"You are ` + agent + `. ` + strings.Repeat("Read carefully and cite your sources. ", 10) + `"}`
		prompt = len(system)
		msgs := append([]string{system}, trunk...)
		for step := 0; step < 5; step++ {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"branch %d step %d"}`, b, step))
			n := &record.Node{Kind: record.KindLLM, Branch: fmt.Sprintf("b%d", b), ForkSeq: 1, Agent: agent, Started: t0,
				LLM: &record.LLM{Model: "m", Request: []byte(`{"model":"m","messages":[` + strings.Join(msgs, ",") + `],"tools":[]}`)}}
			if err := rec.AddNode(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	return count(t, db, `SELECT (SELECT coalesce(sum(length(data)), 0) FROM chain) + (SELECT coalesce(sum(length(data)), 0) FROM blobs) + (SELECT count(*) * 48 FROM requests)`), prompt
}

// DESIGN §6/§12: a fork of 8 inherit branches on 8 different agents stores
// at most 1.2× the same fork on one agent: system prompts are not part of
// the shared chain, so the branches share the inherited history and only
// the seven other prompts are added.
func TestStorage_InheritForkAcrossAgents(t *testing.T) {
	one, _ := recordFork(t, []string{"r", "r", "r", "r", "r", "r", "r", "r"})
	eight, prompt := recordFork(t, []string{"r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7"})
	t.Logf("fork on one agent: %d bytes; on eight agents: %d bytes (%.2f×)", one, eight, float64(eight)/float64(one))
	if float64(eight) > 1.2*float64(one) {
		t.Errorf("fork on eight agents stores %d bytes, more than 1.2× the %d on one agent", eight, one)
	}
	if extra := eight - one; extra > 7*prompt+7*16 {
		t.Errorf("eight agents add %d bytes, more than their seven other %d-byte system prompts", extra, prompt)
	}
}

// DESIGN §6: identical project snapshots are stored once, however many runs
// record them; each run still reads its own snapshot back.
func TestStorage_ProjectSnapshotOnce(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	prompt := strings.Repeat("You are the analyst. ", 200)
	for i := 0; i < 20; i++ {
		files := []record.File{{Path: "agents.yaml", Content: "agents: [analyst]\n"}, {Path: "agents/analyst.md", Content: prompt}}
		if i == 19 {
			files[1].Content = prompt + "Changed."
		}
		if _, err := db.CreateRun(ctx, &record.Run{ID: fmt.Sprintf("run%02d", i), Started: t0.Add(time.Duration(i) * time.Minute), Project: record.Project{Files: files}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(t, db, `SELECT count(*) FROM blobs WHERE data LIKE 'You are the analyst.%'`); got != 2 {
		t.Errorf("the prompt is stored in %d blobs for 20 runs (one changed), want 2", got)
	}
	for _, id := range []string{"run00", "run19"} {
		r, err := db.LoadRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		want := prompt
		if id == "run19" {
			want += "Changed."
		}
		if len(r.Project.Files) != 2 || r.Project.Files[1].Content != want || r.Project.Files[1].SHA256 == "" {
			t.Errorf("%s snapshot = %+v, want its own two files", id, r.Project.Files)
		}
	}
}

// inspect runs reads the totals a run wrote when it finished, not its
// nodes; a run whose writer died gets its totals from the next writer, and
// until then is summed from its nodes.
func TestRuns_TotalsWrittenAtFinish(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	for _, n := range everyKind() {
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(t, db, `SELECT count(*) FROM runs WHERE totals_nodes IS NULL`); got != 1 {
		t.Fatalf("a running run has totals already")
	}
	running, err := db.Runs(ctx, 0)
	if err != nil || len(running) != 1 || running[0].Nodes != int64(len(everyKind())) {
		t.Fatalf("Runs while running = %+v, %v; want the nodes summed", running, err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Rows changed behind the recorder's back show that the listing reads
	// the written totals.
	if _, err := db.w.ExecContext(ctx, `DELETE FROM nodes WHERE run_id=? AND kind='tool'`, rec.RunID()); err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(ctx, 0)
	if err != nil || len(runs) != 1 {
		t.Fatal(runs, err)
	}
	if got := runs[0]; got.Nodes != running[0].Nodes || got.LLMCalls != running[0].LLMCalls || got.TokensIn != running[0].TokensIn ||
		strings.Join(got.Agents, ",") != strings.Join(running[0].Agents, ",") || got.LastEnd != running[0].LastEnd {
		t.Errorf("Runs after finish = %+v, want the totals written at finish (%+v)", got, running[0])
	}

	// A run whose writer is gone: the next CreateRun writes its totals.
	dead, err := db.CreateRun(ctx, &record.Run{ID: "dead00000000", Started: t0.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if err := dead.AddNode(ctx, &record.Node{Kind: record.KindUser, Agent: "a", Started: t0, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE runs SET writer_pid=999999999, writer_tag='x' WHERE id='dead00000000'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateRun(ctx, &record.Run{ID: "next00000000", Started: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db, `SELECT totals_nodes FROM runs WHERE id='dead00000000'`); got != 1 {
		t.Errorf("interrupted run's totals = %d nodes, want 1 written by the next writer", got)
	}
}

// Written totals of a crafted file read within bounds, as node counts do.
func TestRuns_ImpossibleTotals(t *testing.T) {
	db, path := openTemp(t)
	recordOne(t, db)
	db.Close()
	craft(t, path, `UPDATE runs SET totals_in = -7, totals_out = 9223372036854775807`)
	ro, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	runs, err := ro.Runs(context.Background(), 0)
	if err != nil {
		t.Fatalf("Runs: %v", err)
	}
	if runs[0].TokensIn != 0 || runs[0].TokensOut < 0 {
		t.Errorf("tokens = %d in, %d out; want negative read as 0 and no overflow", runs[0].TokensIn, runs[0].TokensOut)
	}
}

// An empty file (a new database not yet written) reads as no runs without a
// temporary upgraded copy, and is left as it is.
func TestOpenReadOnly_EmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := OpenReadOnly(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(context.Background(), 0)
	if err != nil || len(runs) != 0 || !db.Empty {
		t.Errorf("Runs of an empty file = %v, %v (Empty %v); want none, no error, Empty", runs, err, db.Empty)
	}
	if _, err := db.ResolveRun(context.Background(), "latest"); !errors.Is(err, ErrNoRuns) {
		t.Errorf("latest of an empty file: %v, want ErrNoRuns", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file changed: %v, %v", fi, err)
	}
}

// The frame of a request is its model, tools and system prompt without the
// conversation; for a request of a file recorded before v4 (system prompt
// in the chain, system = -1), the chain's first message when it is one.
func TestRequestFrame(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t)
	rec := newRun(t, db)
	bodies := []string{
		`{"model":"m","messages":[{"role":"system","content":"you fork"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}],"tools":[{"type":"function","function":{"name":"fork"}}]}`,
		`{"model":"m","messages":[{"role":"user","content":"q"}],"tools":[]}`,
		`not json`,
	}
	for _, b := range bodies {
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindLLM, Started: t0, LLM: &record.LLM{Request: []byte(b)}}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		`{"model":"m","messages":[{"role":"system","content":"you fork"}],"tools":[{"type":"function","function":{"name":"fork"}}]}`,
		`{"model":"m","messages":[],"tools":[]}`,
		`not json`,
	}
	check := func(when string) {
		t.Helper()
		for i, w := range want {
			got, err := db.RequestFrame(ctx, rec.RunID(), int64(i+1))
			if err != nil || string(got) != w {
				t.Errorf("%s: frame of n%d = %s, %v; want %s", when, i+1, got, err, w)
			}
		}
	}
	check("v4")
	// As a v3 file migrated: the system message in the chain, system = -1.
	var sys int64
	if err := db.r.QueryRowContext(ctx, `SELECT system FROM requests WHERE node_id = (SELECT id FROM nodes WHERE seq = 1)`).Scan(&sys); err != nil {
		t.Fatal(err)
	}
	var sysData []byte
	if err := db.r.QueryRowContext(ctx, `SELECT data FROM blobs WHERE id = ?`, sys).Scan(&sysData); err != nil {
		t.Fatal(err)
	}
	var firstLink int64
	if err := db.r.QueryRowContext(ctx, `SELECT id FROM chain WHERE prev = 0 AND data LIKE ',{"role":"user"%' ORDER BY id LIMIT 1`).Scan(&firstLink); err != nil {
		t.Fatal(err)
	}
	res, err := db.w.ExecContext(ctx, `INSERT INTO chain (prev, hkey, data) VALUES (0, 1, ?)`, sysData)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := res.LastInsertId()
	if _, err := db.w.ExecContext(ctx, `UPDATE chain SET prev = ? WHERE id = ?`, root, firstLink); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE requests SET system = -1 WHERE system = ?`, sys); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Request(ctx, rec.RunID(), 1); err != nil || string(got) != bodies[0] {
		t.Fatalf("v3-style request rebuilt as %s, %v", got, err)
	}
	check("v3 layout")
}

// TestRecorder_PagesOfAModelCall: a model call's start and finish write
// the database pages of the B-trees the contract needs and no more (WAL
// frames, each commit after a TRUNCATE checkpoint; SQLite is
// deterministic, so the count is too). The start: the node, its (run_id,
// seq) index, the two messages, the chain's lookup index, the request;
// the finish: the node, the index of llm nodes by end, the response.
// Before schema v12 an open call had an entry in that index too, written
// by the start: 6.4 + 3.1 pages a call here, 5.4 + 3.1 now (the rest are
// splits; BenchmarkRecordLLMParts measures their time).
func TestRecorder_PagesOfAModelCall(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t)
	rec := newRun(t, db)
	var pageSize int64
	if err := db.r.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	frames := func(fn func() error) int64 {
		t.Helper()
		if _, err := db.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
			t.Fatal(err)
		}
		if err := fn(); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return (fi.Size() - 32) / (pageSize + 24) // the WAL's header, then frames
	}
	c := newBenchConv(6 << 10)
	const calls = 64
	var start, finish int64
	for i := 0; i < calls; i++ {
		call := c.next(i, func(first *record.Node) {
			if err := rec.AddNode(ctx, first); err != nil {
				t.Fatal(err)
			}
		})
		n := call.node()
		start += frames(func() error { return rec.StartNode(ctx, n) })
		call.finished(n)
		finish += frames(func() error { return rec.FinishNode(ctx, n) })
	}
	t.Logf("pages a call: start %.2f, finish %.2f", float64(start)/calls, float64(finish)/calls)
	if start > 6*calls || 10*finish > 34*calls {
		t.Errorf("a call writes %.2f + %.2f pages (start + finish), want at most 6 + 3.4: a B-tree written that the contract does not need", float64(start)/calls, float64(finish)/calls)
	}
}
