package cache_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/importers/importerstest"
	"github.com/inspect-dev/inspect/internal/fixturetest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/stack"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/store/layout"
)

// figures are what a brief analysis gives of one call (everything but the
// break naming), comparable with ==.
type figures struct {
	seq, match, previous       int64
	fidelity                   record.Fidelity
	analyzed                   bool
	skipped                    string
	bytes, reusable            int
	tokens                     int64
	share                      float64
	since                      time.Duration
	reported                   cache.Reported
	mismatch                   cache.Mismatch
	hasMismatch                bool
	unstable, unstablePrevious bool
	unstableFrom               int64
	unstableBreak              cache.Break
	lost                       int64
	unkeyed                    cache.UnkeyedChange
}

func seqOf(n *graph.Node) int64 {
	if n == nil {
		return 0
	}
	return n.Seq
}

func briefFigures(c *cache.Call) figures {
	f := figures{seq: c.Node.Seq, match: seqOf(c.Match), previous: seqOf(c.Previous), fidelity: c.Fidelity, analyzed: c.Analyzed,
		skipped: c.Skipped, bytes: c.Bytes, reusable: c.Reusable, tokens: c.Tokens, share: c.Share, since: c.Since, reported: c.Reported}
	if c.Mismatch != nil {
		f.hasMismatch, f.mismatch = true, *c.Mismatch
	}
	if u := c.Unstable; u != nil {
		f.unstable, f.unstableFrom, f.unstableBreak, f.lost = true, seqOf(u.Previous), u.Break, u.Lost
	}
	if x := c.Unkeyed; x != nil {
		f.unkeyed = *x
	}
	return f
}

// sameFigures fails unless brief (a brief analysis) gives every figure of
// ref: each call's and the totals.
func sameFigures(t *testing.T, what string, brief, ref *cache.Report) {
	t.Helper()
	sameCalls(t, what, brief, ref, true)
}

// sameReport fails unless full (a full analysis) gives every figure and
// every break name of ref.
func sameReport(t *testing.T, what string, full, ref *cache.Report) {
	t.Helper()
	sameCalls(t, what, full, ref, false)
}

func sameCalls(t *testing.T, what string, got, ref *cache.Report, brief bool) {
	t.Helper()
	if len(got.Calls) != len(ref.Calls) {
		t.Fatalf("%s: %d calls, the reference %d", what, len(got.Calls), len(ref.Calls))
	}
	for i, c := range got.Calls {
		if g, w := briefFigures(c), briefFigures(ref.Calls[i]); g != w {
			t.Errorf("%s: %s\n got %+v\nwant %+v", what, c.Node.ID(), g, w)
		}
		switch {
		case brief && c.Break != (cache.Break{Message: -1}):
			t.Errorf("%s: %s: a brief analysis named a break: %+v", what, c.Node.ID(), c.Break)
		case !brief && c.Break != ref.Calls[i].Break:
			t.Errorf("%s: %s: break\n got %+v\nwant %+v", what, c.Node.ID(), c.Break, ref.Calls[i].Break)
		}
	}
	if !reflect.DeepEqual(got.Total, ref.Total) || !reflect.DeepEqual(got.Conversations, ref.Conversations) || !reflect.DeepEqual(got.Agents, ref.Agents) {
		t.Errorf("%s: totals\n got %+v %+v %+v\nwant %+v %+v %+v", what, got.Total, got.Conversations, got.Agents, ref.Total, ref.Conversations, ref.Agents)
	}
}

// briefAgrees checks run g of db: its brief analysis, reading only the
// message bytes it needs, gives the figures of the full analysis; the full
// one, reading only the bytes it compares and quotes, gives every figure
// and break name the full analysis of every byte read gives (the
// reference); the brief one the same as a brief analysis of every byte;
// and the Requests of one Read serve a brief and a full analysis at once.
// It returns the full analysis.
func briefAgrees(t *testing.T, what string, db cache.Source, g *graph.Run) *cache.Report {
	t.Helper()
	ctx := context.Background()
	full, err := cache.Analyze(ctx, g, db, nil)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	brief, err := cache.Analyze(ctx, g, db, &cache.Options{Brief: true})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	sameFigures(t, what+", brief against full", brief, full)
	st := &cache.Options{Stack: stack.For(g.Source)} // what Read leaves out of the requests
	all, err := cache.ReadEvery(ctx, db, g.ID, st)
	if err != nil {
		t.Fatal(err)
	}
	everyByte, err := cache.AnalyzeRequests(ctx, g, all, &cache.Options{Brief: true})
	if err != nil {
		t.Fatal(err)
	}
	sameFigures(t, what+", brief against brief of every byte", brief, everyByte)
	fullEvery, err := cache.AnalyzeRequests(ctx, g, all, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameReport(t, what+", full against full of every byte", full, fullEvery)
	lean, err := cache.Read(ctx, db, g.ID, nil, &cache.Options{Brief: true, Lifetime: time.Hour, Stack: st.Stack})
	if err != nil {
		t.Fatal(err)
	}
	var again, fullAgain *cache.Report
	var briefErr, fullErr error
	var wg sync.WaitGroup
	wg.Go(func() { again, briefErr = cache.AnalyzeRequests(ctx, g, lean, &cache.Options{Brief: true}) }) // another lifetime than Read swept with
	wg.Go(func() { fullAgain, fullErr = cache.AnalyzeRequests(ctx, g, lean, nil) })
	wg.Wait()
	if briefErr != nil || fullErr != nil {
		t.Fatal(briefErr, fullErr)
	}
	sameFigures(t, what+", swept again", again, brief)
	sameReport(t, what+", in full from the same requests", fullAgain, fullEvery)
	return full
}

// The brief analysis (graph labels, the audit) reads the bytes of only
// the messages that share their path with another, yet gives every
// figure the full analysis gives from all the bytes: on every fixture, on
// a realistic run, on bodies whose messages are separated and laid out
// otherwise, and on an older file whose message chains begin with the
// system prompt (re-rooted when read).
func TestBrief_SameFiguresAsFull(t *testing.T) {
	ctx := context.Background()
	t.Run("fixtures", func(t *testing.T) {
		eachFixture(t, func(name string, db *store.DB, g *graph.Run) { briefAgrees(t, name, db, g) })
	})
	// Claude Code sessions (fixtures naming one): their billing block and
	// deferred tools are left out, a compaction summary starts the history
	// again — read in a brief analysis too
	t.Run("sessions", func(t *testing.T) {
		dirs, _ := filepath.Glob(filepath.Join("..", "fixtures", "cache-claude-*", "session.txt"))
		if len(dirs) < 4 {
			t.Fatalf("%d Claude Code cache fixtures", len(dirs))
		}
		for _, d := range dirs {
			name := filepath.Base(filepath.Dir(d))
			db := importerstest.Store(t)
			g, err := fixturetest.Record(ctx, db, filepath.Dir(d), t.TempDir(), "run-"+name, t0)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			briefAgrees(t, name, db, g)
		}
	})
	t.Run("realistic", func(t *testing.T) {
		db := &countingSource{DB: importerstest.Store(t)}
		id, err := graphtest.RecordRealistic(ctx, db.DB, 3000)
		if err != nil {
			t.Fatal(err)
		}
		g, err := graph.Load(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		rep := briefAgrees(t, "realistic", db, g)
		if rep.Total.Analyzed < 1000 || rep.Total.Predicted == 0 {
			t.Fatalf("realistic: %d calls analysed, %d tokens predicted: the run does not exercise the analysis", rep.Total.Analyzed, rep.Total.Predicted)
		}
		db.bytes, db.links = 0, 0
		var all int64
		links, _, err := db.RequestParts(ctx, id, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			all += l.Size
		}
		if _, err := cache.Read(ctx, db, id, nil, &cache.Options{Brief: true}); err != nil {
			t.Fatal(err)
		}
		if db.bytes == 0 || db.bytes > all/4 {
			t.Errorf("the brief read read %d of the run's %d message bytes", db.bytes, all)
		}
		// the full analysis reads besides only the messages its break
		// names quote: about one a call, where its reuse stopped (it read
		// every message before)
		db.bytes, db.links = 0, 0
		full, err := cache.Analyze(ctx, g, db, nil)
		if err != nil {
			t.Fatal(err)
		}
		if db.links > int64(full.Total.Calls)*5/4 || db.bytes > all*2/3 {
			t.Errorf("the full analysis read %d of the run's %d message links, %d of its %d bytes, for %d calls", db.links, len(links), db.bytes, all, full.Total.Calls)
		}
	})
	t.Run("separators", func(t *testing.T) {
		db := importerstest.Store(t)
		g := recordBodies(t, db, separatorBodies)
		src := &countingSource{DB: db}
		rep := briefAgrees(t, "separators", src, g)
		// the hand-checked figures: the same messages laid out otherwise
		// share their whole key; n6 parts from n5 in the tool result's
		// text, n7 reuses all of n6 but its closing bracket, n14 all of
		// n13 up to the two copies' different followers
		key := func(i int) int { return rep.Call(int64(i)).Bytes }
		for _, tt := range []struct {
			seq, reusable int
			match         []int64
		}{
			{3, key(3), []int64{2, 3}},
			{4, key(4), []int64{2, 3}},
			{6, len(tools) - len(`"tools":`) + len(sys) + len("["+hi+","+call+",") + len(`{"role":"tool","tool_call_id":"c1","content":"1`), []int64{5}},
			{7, key(6) - 1, []int64{6}},
			{14, key(13) - len(`2°C"}]`), []int64{13}},
		} {
			c := rep.Call(int64(tt.seq))
			if c == nil || c.Reusable != tt.reusable || !slices.Contains(tt.match, seqOf(c.Match)) {
				t.Errorf("n%d: reusable %d, match %d; want %d from one of %v", tt.seq, c.Reusable, seqOf(c.Match), tt.reusable, tt.match)
			}
		}
		src.reads = 0
		if _, err := cache.Read(ctx, src, g.ID, nil, &cache.Options{Brief: true}); err != nil || src.reads < 2 {
			t.Errorf("the brief read read message bytes %d times (%v); the copies' followers need a second", src.reads, err)
		}
	})
	t.Run("older file", func(t *testing.T) {
		path, db, g, realistic := separatorsAndRealistic(t)
		var err error
		before := map[string]*cache.Report{}
		for _, r := range []*graph.Run{g, realistic} {
			if before[r.ID], err = cache.Analyze(ctx, r, db, nil); err != nil {
				t.Fatal(err)
			}
		}
		db = asOlderFile(t, db, path)
		for _, r := range []*graph.Run{g, realistic} {
			var inChain int
			_, reqs, err := db.RequestParts(ctx, r.ID, nil, false)
			for _, p := range reqs {
				if p.SystemInChain {
					inChain++
				}
			}
			if err != nil || inChain == 0 {
				t.Fatalf("%s: %d requests keep their system prompt in the chain (%v)", r.ID, inChain, err)
			}
			full := briefAgrees(t, "older "+r.ID, db, r)
			// re-rooted, the older layout gives the same prefixes (an
			// unstable system prompt's text is not quoted from the chain)
			sameFigures(t, "older "+r.ID+", against the newer layout", briefOf(full), briefOf(before[r.ID]))
		}
	})
}

// briefOf is rep without its break names and the quoted text of an
// unstable prefix's break.
func briefOf(rep *cache.Report) *cache.Report {
	out := *rep
	out.Calls = nil
	for _, c := range rep.Calls {
		c2 := *c
		c2.Break = cache.Break{Message: -1}
		if u := c.Unstable; u != nil {
			u2 := *u
			u2.Break.What = ""
			c2.Unstable = &u2
		}
		out.Calls = append(out.Calls, &c2)
	}
	return &out
}

// countingSource counts the message bytes read: with ScanMessages, and
// with the links of RequestParts.
type countingSource struct {
	*store.DB
	reads        int
	links, bytes int64
}

func (s *countingSource) RequestParts(ctx context.Context, run string, seqs []int64, data bool) (layout.Links, []layout.RequestParts, error) {
	links, reqs, err := s.DB.RequestParts(ctx, run, seqs, data)
	for _, l := range links {
		if l.Data != nil {
			s.links++
			s.bytes += int64(len(l.Data))
		}
	}
	return links, reqs, err
}

func (s *countingSource) ScanMessages(ctx context.Context, ids []int64, link func(layout.MessageLink) error) error {
	s.reads++
	return s.DB.ScanMessages(ctx, ids, func(l layout.MessageLink) error {
		s.links++
		s.bytes += int64(len(l.Data))
		return link(l)
	})
}

// allFixtures lists every fixture: scripted and imported.
func allFixtures(t *testing.T) []string {
	t.Helper()
	out := fixtures(t)
	entries, _ := filepath.Glob(filepath.Join("..", "fixtures", "*", fixturetest.Trace))
	for _, e := range entries {
		out = append(out, filepath.Base(filepath.Dir(e)))
	}
	if len(out) < 20 {
		t.Fatalf("%d fixtures found", len(out))
	}
	return out
}

const (
	sys   = `{"role":"system","content":"You answer questions about the weather."}`
	tools = `"tools":[{"type":"function","function":{"name":"get_weather"}}]`
	hi    = `{"role":"user","content":"What is the weather in Paris?"}`
	hi2   = `{"role":"user","content":"And in Rome?"}`
	call  = `{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`
	res   = `{"role":"tool","tool_call_id":"c1","content":"12°C"}`
	res2  = `{"role":"tool","tool_call_id":"c1","content":"13°C"}`
)

// separatorBodies are requests of one model, each started after the one
// before finished: the same messages separated by ",", ", " or a new line
// and indent (pretty-printed), without a system message, a system
// prompt of Anthropic's shape, messages that are not objects, and two
// copies of a message that differ only in their separator, each followed
// by its own next message (so that the copies' followers are compared
// only once the copies are known equal).
var separatorBodies = []string{
	`{"model":"m","messages":[` + sys + `,` + hi + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `,` + hi + `,` + call + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `, ` + hi + `, ` + call + `],` + tools + `}`,
	"{\n  \"model\": \"m\",\n  \"messages\": [\n    " + sys + ",\n    " + hi + ",\n    " + call + "\n  ],\n  " + tools + "\n}",
	`{"model":"m","messages":[` + sys + `, ` + hi + `,` + call + `, ` + res + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `,` + hi + `, ` + call + `,` + res2 + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `,` + hi + `, ` + call + `,` + res2 + `,` + hi + `],` + tools + `}`,
	`{"model":"m","messages":[` + hi + `,` + call + `],` + tools + `}`,
	`{"model":"m","system":"You answer questions about the weather.","messages":[` + hi + `, ` + call + `],` + tools + `}`,
	`{"model":"m","messages":["a string message", "another"],` + tools + `}`,
	`{"model":"m","messages":["a string message", "and a third"],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `,` + hi + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `,` + hi2 + `,` + res + `],` + tools + `}`,
	`{"model":"m","messages":[` + sys + `, ` + hi2 + `,` + res2 + `],` + tools + `}`,
}

// recordBodies records one run of llm nodes with these request bodies,
// one second each, one after another, and loads its graph.
func recordBodies(t *testing.T, db *store.DB, bodies []string) *graph.Run {
	t.Helper()
	ctx := context.Background()
	var nodes []*record.Node
	at := t0
	for _, b := range bodies {
		nodes = append(nodes, &record.Node{Kind: record.KindLLM, Agent: "a", Started: at, Ended: at.Add(time.Second), Status: record.StatusOK,
			LLM: &record.LLM{Model: "m", Request: []byte(b), Usage: record.Usage{In: int64(len(b) / 4), Out: 5}}})
		at = at.Add(2 * time.Second)
	}
	id, err := graphtest.RecordNodes(ctx, db, &record.Run{Started: t0, Tasks: []string{"bodies"}, Models: []string{"m"}}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	g, err := graph.Load(ctx, db, id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// systemInChain rewrites the file at path as a file recorded before the
// system prompt was stored apart (schema v3's layout, migrated): each
// request's chain starts with its system message, if any, and every
// request says so (system = -1). The new links are added after the
// others, which stay.
func systemInChain(t *testing.T, path string) {
	t.Helper()
	raw, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	tx, err := raw.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	type request struct{ node, system, last int64 }
	var reqs []request
	rows, err := tx.Query(`SELECT node_id, system, last FROM requests`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r request
		if err := rows.Scan(&r.node, &r.system, &r.last); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
	}
	rows.Close()
	insert := func(prev int64, data []byte) int64 {
		h := sha256.Sum256(data)
		res, err := tx.Exec(`INSERT INTO chain (prev, hkey, data) VALUES (?, ?, ?)`, prev, int64(binary.BigEndian.Uint64(h[:8])), data)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		return id
	}
	moved := map[string]int64{} // old chain path -> its copy after the system message
	for _, r := range reqs {
		var msgs [][]byte
		for id := r.last; id != 0; {
			var prev int64
			var data []byte
			if err := tx.QueryRow(`SELECT prev, data FROM chain WHERE id = ?`, id).Scan(&prev, &data); err != nil {
				t.Fatal(err)
			}
			msgs = append([][]byte{data}, msgs...)
			id = prev
		}
		last := int64(0)
		key := ""
		if r.system > 0 {
			var s []byte
			if err := tx.QueryRow(`SELECT data FROM blobs WHERE id = ?`, r.system).Scan(&s); err != nil {
				t.Fatal(err)
			}
			key = fmt.Sprint(r.system)
			if last = moved[key]; last == 0 {
				last = insert(0, s)
				moved[key] = last
			}
		}
		for _, m := range msgs {
			key += "/" + fmt.Sprintf("%x", sha256.Sum256(m))
			id := moved[key]
			if id == 0 {
				id = insert(last, m)
				moved[key] = id
			}
			last = id
		}
		if _, err := tx.Exec(`UPDATE requests SET system = -1, last = ? WHERE node_id = ?`, last, r.node); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
