package cache_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
)

var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// recorded is a fixture's run with its analysis and each call's key built
// from scratch.
type recorded struct {
	db   *store.DB
	g    *graph.Run
	rep  *cache.Report
	keys map[int64][]byte
}

func record1(t *testing.T, name string) *recorded {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	g, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "fixtures", name), t.TempDir(), "run-"+name, t0)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cache.Analyze(ctx, g, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &recorded{db: db, g: g, rep: rep, keys: map[int64][]byte{}}
	for _, n := range g.Nodes {
		if n.Kind == record.KindLLM {
			body, err := db.Request(ctx, g.ID, n.Seq)
			if err != nil {
				t.Fatal(err)
			}
			r.keys[n.Seq] = naiveKey(t, body)
		}
	}
	return r
}

// naiveKey is DESIGN §15's comparison key built from a whole body with
// encoding/json, independently of package prefix: the tools array, the
// leading system message, the other messages as an array.
func naiveKey(t *testing.T, body []byte) []byte {
	t.Helper()
	var b struct {
		Tools    json.RawMessage   `json:"tools"`
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	key := []byte("null")
	if len(b.Tools) > 0 {
		key = append([]byte(nil), b.Tools...)
	}
	msgs := b.Messages
	if len(msgs) > 0 && strings.Contains(string(msgs[0][:min(len(msgs[0]), 20)]), `"role":"system"`) {
		key = append(key, msgs[0]...)
		msgs = msgs[1:]
	}
	if len(msgs) == 0 {
		return append(key, "null"...)
	}
	key = append(key, '[')
	for i, m := range msgs {
		if i > 0 {
			key = append(key, ',')
		}
		key = append(key, m...)
	}
	return append(key, ']')
}

func common(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func (r *recorded) call(t *testing.T, seq int64) *cache.Call {
	t.Helper()
	c := r.rep.Call(seq)
	if c == nil || !c.Analyzed {
		t.Fatalf("n%d: no analysed call (%+v)", seq, c)
	}
	return c
}

// fixtures lists every scripted fixture.
func fixtures(t *testing.T) []string {
	entries, err := os.ReadDir(filepath.Join("..", "fixtures"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("..", "fixtures", e.Name(), "script.yaml")); e.IsDir() && err == nil {
			out = append(out, e.Name())
		}
	}
	return out
}

// On every fixture, each call's predicted prefix is the longest one its
// key shares with an earlier request of the same model that had finished,
// within the lifetime, when it started (compared with every one, from
// keys built from scratch), and the scripted model's simulated cache
// reported exactly that: one definition, two uses.
func TestAnalyze_EveryFixtureAgreesWithTheDefinitionAndTheSimulation(t *testing.T) {
	for _, name := range fixtures(t) {
		t.Run(name, func(t *testing.T) {
			r := record1(t, name)
			if !r.rep.Simulated {
				t.Fatal("a scripted run is not marked simulated")
			}
			for _, c := range r.rep.Calls {
				n := c.Node
				if !c.Analyzed {
					t.Errorf("%s not analysed: %s", n.ID(), c.Skipped)
					continue
				}
				want, best := 0, int64(0)
				for _, m := range r.g.Nodes {
					if m.Kind != record.KindLLM || m.Seq >= n.Seq || m.Status != record.StatusOK || m.LLM.Model != n.LLM.Model ||
						m.Ended.After(n.Started) || n.Started.Sub(m.Ended) > 5*time.Minute {
						continue
					}
					if k := common(r.keys[n.Seq], r.keys[m.Seq]); k > want {
						want, best = k, m.Seq
					}
				}
				if c.Reusable != want || c.Bytes != len(r.keys[n.Seq]) {
					t.Errorf("%s: reusable %d of %d bytes, want %d of %d (best n%d)", n.ID(), c.Reusable, c.Bytes, want, len(r.keys[n.Seq]), best)
				}
				if want > 0 && (c.Match == nil || common(r.keys[n.Seq], r.keys[c.Match.Seq]) != want) {
					t.Errorf("%s: match %v does not share the %d bytes", n.ID(), c.Match, want)
				}
				if n.Status != record.StatusOK {
					if c.Mismatch != nil {
						t.Errorf("%s failed, yet its usage is compared: %s", n.ID(), c.Mismatch.Text())
					}
					continue // a failed call reports nothing to compare
				}
				if u := n.LLM.Usage; !u.CachedReported || (u.Cached != c.Tokens && u.Cached != u.In) {
					t.Errorf("%s: the simulation reported %d cached (of %d in), the analysis predicts %d", n.ID(), u.Cached, u.In, c.Tokens)
				}
				if c.Mismatch != nil && n.LLM.Usage.Cached != n.LLM.Usage.In {
					t.Errorf("%s: mismatch %s on a scripted run", n.ID(), c.Mismatch.Text())
				}
				if c.Unstable != nil {
					t.Errorf("%s: our runtime keeps the prefix still, yet %s", n.ID(), c.Unstable.Break.Why)
				}
			}
		})
	}
}

// Every row of seed §4's cost table, each a fixture, its predicted prefix
// checked against the bytes: which earlier request it reuses, where it
// breaks and why.
func TestAnalyze_SeedCostTable(t *testing.T) {
	// keep it here: each call reuses the previous one whole (all of its key
	// but the closing bracket), only the newest tail is new.
	t.Run("keep it here", func(t *testing.T) {
		r := record1(t, "fanout-compact")
		c := r.call(t, 4)
		if c.Match == nil || c.Match.Seq != 2 || c.Reusable != len(r.keys[2])-1 || c.Break.Cause != cache.CauseTail || c.Break.Where != "messages[2]" || !c.Break.Expected {
			t.Errorf("n4: %+v from %v, want n2's whole key (%d bytes) reused, the tail new at messages[2]", c.Break, c.Match, len(r.keys[2])-1)
		}
	})
	// hand-off: the target's first call misses at its tools (a new tool
	// array and system prompt), whatever the transcript.
	t.Run("hand-off", func(t *testing.T) {
		r := record1(t, "handoff-chain")
		c := r.call(t, 4)
		if c.Break.Where != "tools" || c.Break.Cause != cache.CauseHandoff || !strings.Contains(c.Break.Why, "hand-off at n3") || c.Reusable != common(r.keys[4], r.keys[2]) {
			t.Errorf("n4 (billing's first): %+v, reusable %d", c.Break, c.Reusable)
		}
		// the share is within the tool array: less than billing's tools
		var body struct{ Tools json.RawMessage }
		b, _ := r.db.Request(context.Background(), r.g.ID, 4)
		_ = json.Unmarshal(b, &body)
		if c.Reusable >= len(body.Tools) {
			t.Errorf("n4 reuses %d bytes, more than its tool array (%d)", c.Reusable, len(body.Tools))
		}
	})
	// hand-off back within the lifetime: support's prefix up to its
	// hand-off (n4, its last request before it) is reused.
	t.Run("hand-off back", func(t *testing.T) {
		r := record1(t, "cache-handoff-back")
		c := r.call(t, 10)
		if c.Match == nil || c.Match.Seq != 4 || c.Reusable != len(r.keys[4])-1 || c.Break.Cause != cache.CauseBack || c.Break.Where != "messages[4]" {
			t.Errorf("n10 (support back): %+v from %v, reusable %d, want n4's key (%d) reused", c.Break, c.Match, c.Reusable, len(r.keys[4])-1)
		}
		if c := r.call(t, 6); c.Break.Cause != cache.CauseHandoff {
			t.Errorf("n6 (billing's first): %+v", c.Break)
		}
	})
	// fork, inherit, same agent: the inherited prefix is byte-identical up
	// to the fork call: a branch reuses the parent's request whole.
	t.Run("fork inherit same agent", func(t *testing.T) {
		r := record1(t, "inherit-same-agent")
		for _, seq := range []int64{9, 11} {
			c := r.call(t, seq)
			if c.Match == nil || c.Match.Seq != 7 || c.Reusable != len(r.keys[7])-1 || c.Break.Cause != cache.CauseBranch || !strings.Contains(c.Break.Why, "inherit context") {
				t.Errorf("n%d: %+v from %v, reusable %d, want n7's key (%d)", seq, c.Break, c.Match, c.Reusable, len(r.keys[7])-1)
			}
		}
	})
	// fork, inherit, other agent: another system prompt and tools, so the
	// whole history is paid uncached, once per branch.
	t.Run("fork inherit other agent", func(t *testing.T) {
		r := record1(t, "audit-fork-inherit-uncached")
		branches := 0
		for _, c := range r.rep.Calls {
			if c.Node.Conv.Branch == nil || c.Node.Conv.Nodes[0] != c.Node && firstLLM(c.Node) != c.Node {
				continue
			}
			branches++
			var body struct{ Tools json.RawMessage }
			b, _ := r.db.Request(context.Background(), r.g.ID, c.Node.Seq)
			_ = json.Unmarshal(b, &body)
			if (c.Break.Where != "tools" && c.Break.Where != "system") || c.Break.Cause != cache.CauseBranch || c.Reusable >= len(body.Tools) {
				t.Errorf("%s (a branch's first call): %+v, reusable %d, want less than its tools (%d): no history reused", c.Node.ID(), c.Break, c.Reusable, len(body.Tools))
			}
		}
		if branches < 2 {
			t.Fatalf("%d branch starts", branches)
		}
	})
	// fork, compact, same agent: hits only up to the first dropped tool
	// call — the system prompt, the tools, the task, then the branch's
	// fork call where the parent had its read_file call.
	t.Run("fork compact same agent", func(t *testing.T) {
		r := record1(t, "cache-compact-same-agent")
		for _, seq := range []int64{6, 10} {
			c := r.call(t, seq)
			if c.Match == nil || c.Match.Seq != 4 || c.Break.Where != "messages[2]" || c.Break.Cause != cache.CauseCompact || !strings.Contains(c.Break.Why, "read_file") {
				t.Errorf("n%d: %+v from %v", seq, c.Break, c.Match)
			}
			// the task (all of n2 but its closing bracket) and part of
			// messages[2], never the read_file call and its result
			if want := common(r.keys[seq], r.keys[4]); c.Reusable != want || want < len(r.keys[2])-1 || want >= len(r.keys[4])-1 {
				t.Errorf("n%d: reusable %d, want %d, within n4's messages[2] (%d..%d)", seq, c.Reusable, want, len(r.keys[2])-1, len(r.keys[4])-1)
			}
		}
	})
	// fork, none: nothing shared with the parent (another agent: only the
	// common start of the tool arrays); the second fork's branches share
	// the researcher's tools and system prompt with the first fork's.
	t.Run("fork none same-agent siblings", func(t *testing.T) {
		r := record1(t, "cache-none-siblings")
		if c := r.call(t, 4); c.Match.Seq != 2 || c.Break.Where != "tools" {
			t.Errorf("n4 (eu's first): %+v from %v", c.Break, c.Match)
		}
		for _, seq := range []int64{15, 19} {
			c := r.call(t, seq)
			if c.Match == nil || c.Match.Conv.Branch == nil || c.Match.Conv.Branch.Fork.Node.Seq != 3 || c.Break.Where != "messages[1]" || !strings.Contains(c.Break.Why, "none context") {
				t.Errorf("n%d: %+v from %v", seq, c.Break, c.Match)
			}
		}
	})
	// the parent after a join: its prefix up to the fork call is unchanged;
	// the join's result is new.
	t.Run("parent after join", func(t *testing.T) {
		r := record1(t, "inherit-same-agent")
		c := r.call(t, 14)
		if c.Break.Cause != cache.CauseJoin || c.Reusable < len(r.keys[7])-1 || c.Break.Where != "messages[8]" {
			t.Errorf("n14: %+v, reusable %d, want at least n7's %d", c.Break, c.Reusable, len(r.keys[7])-1)
		}
	})
}

func firstLLM(n *graph.Node) *graph.Node {
	for _, x := range n.Conv.Nodes {
		if x.Kind == record.KindLLM {
			return x
		}
	}
	return nil
}

// The lifetime: with a lifetime shorter than the gap, the earlier request
// is gone and nothing is reusable; totals count reads as reported.
func TestAnalyze_Lifetime(t *testing.T) {
	r := record1(t, "cache-handoff-back")
	rep, err := cache.Analyze(context.Background(), r.g, r.db, &cache.Options{Lifetime: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Calls {
		if c.Match != nil && c.Since > time.Second {
			t.Errorf("%s reuses %s, finished %s before", c.Node.ID(), c.Match.ID(), c.Since)
		}
	}
	// support's own prefix (n4) finished 2s before it is back: gone.
	if c := rep.Call(10); c.Match == nil || c.Match.Seq == 4 || c.Break.Cause == cache.CauseBack {
		t.Errorf("n10 with a 1s lifetime: %+v from %v", c.Break, c.Match)
	}
	var reads int64
	for _, n := range r.g.Nodes {
		if n.Kind == record.KindLLM {
			reads += n.LLM.Usage.Cached
		}
	}
	if rep.Total.Reads != reads || rep.Total.Basis() != "reported" || rep.Total.Calls != 5 || rep.Total.Predicted >= reads {
		t.Errorf("totals %+v (%s), want the %d reported reads, more than the short lifetime predicts", rep.Total, rep.Total.Basis(), reads)
	}
}
