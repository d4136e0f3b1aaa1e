package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/store/layout"
)

// parts rebuilds every request RequestParts gives from its parts.
func parts(t *testing.T, db *store.DB, run string, seqs []int64) (map[int64][]byte, int) {
	t.Helper()
	list, reqs, err := db.RequestParts(context.Background(), run, seqs, true)
	if err != nil {
		t.Fatal(err)
	}
	links := map[int64]layout.MessageLink{}
	for _, l := range list {
		if _, dup := links[l.ID]; dup {
			t.Errorf("link %d given twice", l.ID)
		}
		if _, ok := links[l.Prev]; l.Prev != 0 && !ok {
			t.Errorf("link %d before its prev %d", l.ID, l.Prev)
		}
		links[l.ID] = l
	}
	out := map[int64][]byte{}
	for i, p := range reqs {
		if i > 0 && reqs[i-1].Seq >= p.Seq {
			t.Errorf("request n%d after n%d", p.Seq, reqs[i-1].Seq)
		}
		var chain [][]byte
		for id := p.Last; id != 0; id = links[id].Prev {
			chain = append(chain, links[id].Data)
		}
		b := append(append([]byte(nil), p.Head...), p.System...)
		for i := len(chain) - 1; i >= 0; i-- {
			b = append(b, chain[i]...)
		}
		out[p.Seq] = append(b, p.Tail...)
	}
	return out, len(links)
}

// The parts of every request of a realistic run join back to the body
// Request rebuilds, each link given once; a subset reads only its own.
func TestRequestParts_JoinsBack(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := graphtest.RecordRealistic(ctx, db, 600)
	if err != nil {
		t.Fatal(err)
	}
	all, links := parts(t, db, run, nil)
	var llm []int64
	if err := db.ScanNodes(ctx, &record.Run{ID: run}, func(n *record.Node) error {
		if n.Kind == record.KindLLM {
			llm = append(llm, n.Seq)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(llm) || len(llm) < 100 {
		t.Fatalf("%d requests for %d llm nodes", len(all), len(llm))
	}
	for _, seq := range llm {
		want, err := db.Request(ctx, run, seq)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(all[seq], want) {
			t.Fatalf("n%d: parts join to\n%s\nwant\n%s", seq, all[seq], want)
		}
	}
	some, fewer := parts(t, db, run, llm[:3])
	if len(some) != 3 || fewer >= links {
		t.Errorf("a subset of 3 requests gave %d requests and %d of the run's %d links", len(some), fewer, links)
	}
}

// A chain that loops, or a link whose bytes were cut, is refused as damaged.
func TestRequestParts_Damaged(t *testing.T) {
	for _, tt := range []struct{ name, sql string }{
		{"loop", `UPDATE chain SET prev = (SELECT max(id) FROM chain) WHERE prev = 0`},
		{"cut", `UPDATE chain SET data = substr(data, 2) WHERE id = (SELECT max(id) FROM chain)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "runs.db")
			db, err := store.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			run, err := graphtest.RecordRealistic(ctx, db, 100)
			if err != nil {
				t.Fatal(err)
			}
			db.Close()
			raw, err := sql.Open("sqlite3", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(tt.sql); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			ro, err := store.OpenReadOnly(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			for _, data := range []bool{true, false} {
				_, _, err = ro.RequestParts(ctx, run, nil, data)
				if err == nil || !strings.Contains(err.Error(), "the database is damaged") {
					t.Fatalf("RequestParts (data %v) = %v, want the database is damaged", data, err)
				}
			}
		})
	}
}

// A run that shares its first messages with an older run, with thousands
// of another run's messages recorded between them: the scan down from the
// newest link stops among the other run's and the rest are walked, and
// every request still joins back.
func TestRequestParts_SharedWithAnOlderRun(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := graphtest.RecordRealistic(ctx, db, 200); err != nil {
		t.Fatal(err)
	}
	// the filler: one request of 5,000 messages no other run has
	rec, err := db.CreateRun(ctx, &record.Run{Started: graphtest.Start, Tasks: []string{"filler"}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(`{"model":"m","messages":[`)
	for i := 0; i < 5000; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"role":"user","content":"filler %d"}`, i)
	}
	b.WriteString(`]}`)
	n := &record.Node{Kind: record.KindLLM, Started: graphtest.Start, Ended: graphtest.Start, Status: record.StatusOK, LLM: &record.LLM{Model: "m", Request: []byte(b.String())}}
	if err := rec.AddNode(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", graphtest.Start); err != nil {
		t.Fatal(err)
	}
	run, err := graphtest.RecordRealistic(ctx, db, 600)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := parts(t, db, run, nil)
	for seq, got := range all {
		want, err := db.Request(ctx, run, seq)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("n%d: parts do not join back to its request", seq)
		}
	}
}

// Read without their bytes, the links are the same links with their
// sizes and separators, and ScanMessages reads the bytes of those asked
// for, in id order: on a realistic run and on bodies laid out otherwise.
func TestRequestParts_WithoutData(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	realistic, err := graphtest.RecordRealistic(ctx, db, 300)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := db.CreateRun(ctx, &record.Run{Started: graphtest.Start, Tasks: []string{"layouts"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`,
		"{\"model\":\"m\",\"messages\":[\n  {\"role\":\"user\",\"content\":\"a\"},\n  {\"role\":\"user\",\"content\":\"b\"}\n]}",
		`{"model":"m","messages":["a", "b",{"role":"user","content":"c"}]}`,
	} {
		n := &record.Node{Kind: record.KindLLM, Started: graphtest.Start, Ended: graphtest.Start, Status: record.StatusOK, LLM: &record.LLM{Model: "m", Request: []byte(body)}}
		if err := rec.AddNode(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Finish(ctx, record.StatusOK, "", graphtest.Start); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{realistic, rec.RunID()} {
		scan := func(data bool) (layout.Links, []layout.RequestParts) {
			links, reqs, err := db.RequestParts(ctx, run, nil, data)
			if err != nil {
				t.Fatal(err)
			}
			return links, reqs
		}
		with, reqs := scan(true)
		without, reqs2 := scan(false)
		if len(with) != len(without) || len(reqs) != len(reqs2) || len(with) == 0 {
			t.Fatalf("%d links and %d requests with their bytes, %d and %d without", len(with), len(reqs), len(without), len(reqs2))
		}
		seps := map[int]int{}
		var ids []int64
		for i, l := range with {
			w := without[i]
			if w.Data != nil || w.ID != l.ID || w.Prev != l.Prev || w.Size != int64(len(l.Data)) || w.Size != l.Size || w.Sep != l.Sep {
				t.Fatalf("link %d: %+v without its bytes, %+v with (%q)", l.ID, w, l, l.Data)
			}
			if l.Sep >= 0 && (l.Data[l.Sep] != '{' || len(bytes.TrimLeft(l.Data, " \n,")) != len(l.Data)-l.Sep) {
				t.Errorf("link %d: separator %d in %q", l.ID, l.Sep, l.Data)
			}
			seps[l.Sep]++
			if i%2 == 0 {
				ids = append(ids, l.ID)
			}
		}
		if run != realistic && (seps[-1] == 0 || seps[0] == 0 || seps[1] == 0) {
			t.Errorf("separators %v: the layouts give every kind", seps)
		}
		var got []int64
		if err := db.ScanMessages(ctx, append(ids, 1<<40), func(l layout.MessageLink) error {
			i, _ := with.Index(l.ID)
			if !bytes.Equal(l.Data, with[i].Data) || l.Sep != with[i].Sep || l.Prev != with[i].Prev {
				t.Errorf("ScanMessages gave link %d as %+v, want %+v", l.ID, l, with[i])
			}
			got = append(got, l.ID)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, ids) {
			t.Errorf("ScanMessages gave %v, want %v (an id the chain lacks left out)", got, ids)
		}
	}
}

// TestRequestParts_Halves: a run's requests read in two halves at once
// (a large run, on more than one CPU) are the requests read in one query,
// in seq order, each once, whether the middle seq is a model call or not.
func TestRequestParts_Halves(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// model calls at even seqs, tools between: 40 nodes split at n20 (a
	// call), 42 at n21 (a tool)
	for _, n := range []int{40, 42} {
		rec, err := db.CreateRun(ctx, &record.Run{Started: graphtest.Start, Tasks: []string{"halves"}})
		if err != nil {
			t.Fatal(err)
		}
		msgs := `{"role":"user","content":"go"}`
		for i := 1; i <= n; i++ {
			nd := &record.Node{Kind: record.KindTool, Tool: &record.Tool{Name: "read"}, Started: graphtest.Start, Ended: graphtest.Start, Status: record.StatusOK}
			if i%2 == 0 {
				msgs += fmt.Sprintf(`,{"role":"assistant","content":"step %d"}`, i)
				nd = &record.Node{Kind: record.KindLLM, Started: graphtest.Start, Ended: graphtest.Start, Status: record.StatusOK,
					LLM: &record.LLM{Model: "m", Request: []byte(`{"model":"m","messages":[` + msgs + `]}`)}}
			}
			if err := rec.AddNode(ctx, nd); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.Finish(ctx, record.StatusOK, "", graphtest.Start); err != nil {
			t.Fatal(err)
		}
		run := rec.RunID()
		restore := store.SetHalvesFrom(1 << 30)
		wholeLinks, whole, err := db.RequestParts(ctx, run, nil, false)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		restore = store.SetHalvesFrom(2)
		links, halves, err := db.RequestParts(ctx, run, nil, false)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != n/2 || !reflect.DeepEqual(halves, whole) || !reflect.DeepEqual(links, wholeLinks) {
			t.Errorf("%d nodes: %d requests and %d links in halves, %d and %d whole", n, len(halves), len(links), len(whole), len(wholeLinks))
		}
	}
}
