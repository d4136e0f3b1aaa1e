package prefix

import (
	"bytes"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// randPrompt builds a prompt of JSON-shaped parts from a small alphabet,
// so that prompts share long prefixes, repeat, and extend each other.
func randPrompt(rng *rand.Rand, t *Tree, paths *[]Msg) Prompt {
	word := func(open, close string, n int) []byte {
		b := []byte(open)
		for i := rng.IntN(n); i > 0; i-- {
			b = append(b, "ab"[rng.IntN(2)])
		}
		return append(b, close...)
	}
	tools := []byte("null")
	if rng.IntN(4) > 0 {
		tools = word("[", "]", 3)
	}
	var system []byte
	if rng.IntN(4) > 0 {
		system = word("{", "}", 3)
	}
	last := Root
	if len(*paths) > 0 && rng.IntN(3) > 0 {
		last = (*paths)[rng.IntN(len(*paths))] // extend or branch off an earlier path
		last = t.Ancestor(last, rng.IntN(t.Depth(last)+1))
	}
	for i := rng.IntN(4); i > 0; i-- {
		last = t.Message(last, word("{", "}", 3))
	}
	*paths = append(*paths, last)
	return Prompt{Tools: t.Part(tools), System: t.Part(system), Last: last}
}

// randPrompts builds n random prompts in a new tree.
func randPrompts(seed uint64, n int) (*rand.Rand, *Tree, []Prompt, *[]Msg) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	tr := NewTree()
	paths := new([]Msg)
	var ps []Prompt
	for i := 0; i < n; i++ {
		ps = append(ps, randPrompt(rng, tr, paths))
	}
	return rng, tr, ps, paths
}

// The structural prefix is the byte-wise common prefix of the two keys,
// and the order is the one the search relies on.
func TestTree_SharedIsCommonPrefixOfKeys(t *testing.T) {
	_, tr, ps, _ := randPrompts(3, 400)
	for i, a := range ps {
		for j, b := range ps {
			want := commonPrefix(tr.Key(a), tr.Key(b))
			if got := tr.Shared(a, b); got != want {
				t.Fatalf("Shared(%q, %q) = %d, want %d", tr.Key(a), tr.Key(b), got, want)
			}
			if i == j && tr.Len(a) != len(tr.Key(a)) {
				t.Fatalf("Len(%q) = %d, want %d", tr.Key(a), tr.Len(a), len(tr.Key(a)))
			}
			if c, d := tr.Compare(a, b), tr.Compare(b, a); c != -d || (c == 0) != (a == b) {
				t.Fatalf("Compare(%q, %q) = %d, reversed %d", tr.Key(a), tr.Key(b), c, d)
			}
		}
	}
	// In the set's order, the prefix shared with any prompt never grows
	// walking away from it.
	sort.Slice(ps, func(i, j int) bool { return tr.Compare(ps[i], ps[j]) < 0 })
	for i := range ps {
		for j := i + 1; j+1 < len(ps); j++ {
			if tr.Shared(ps[i], ps[j+1]) > tr.Shared(ps[i], ps[j]) {
				t.Fatalf("order: %q shares more with %q than with the nearer %q", tr.Key(ps[i]), tr.Key(ps[j+1]), tr.Key(ps[j]))
			}
		}
	}
}

// Once ordered, Compare answers what comparing the bytes answers, for
// every pair; a node added afterwards puts the bytes back in charge.
func TestTree_OrderKeepsCompare(t *testing.T) {
	rng, tr, ps, paths := randPrompts(5, 300)
	want := make([][]int, len(ps))
	for i, a := range ps {
		for _, b := range ps {
			want[i] = append(want[i], tr.Compare(a, b))
		}
	}
	check := func(when string) {
		t.Helper()
		for i, a := range ps {
			for j, b := range ps {
				if got := tr.Compare(a, b); got != want[i][j] {
					t.Fatalf("%s: Compare(%q, %q) = %d, the bytes say %d", when, tr.Key(a), tr.Key(b), got, want[i][j])
				}
			}
		}
	}
	tr.Order()
	check("ordered")
	if len(tr.rank) != len(tr.nodes) || len(tr.prank) != len(tr.parts) {
		t.Fatal("Order left nodes or parts unranked")
	}
	ps = append(ps, randPrompt(rng, tr, paths))
	tr.Part([]byte("[a new tool]"))
	for i := range want {
		want[i] = append(want[i], tr.Compare(ps[i], ps[len(ps)-1]))
	}
	want = append(want, nil)
	for _, b := range ps {
		want[len(ps)-1] = append(want[len(ps)-1], tr.Compare(ps[len(ps)-1], b))
	}
	check("after a new node")
}

// A tree whose lone messages (the only one after their path) were added
// unread measures every prompt as the tree that holds their bytes does:
// lengths, shared prefixes, breaks, order; only their bytes are missing.
func TestTree_Unread(t *testing.T) {
	_, full, ps, _ := randPrompts(7, 300)
	kids := make([]int, len(full.nodes))
	for m := 1; m < len(full.nodes); m++ {
		kids[full.nodes[m].parent]++
	}
	lean := NewTree()
	for p := Part(0); int(p) < len(full.parts); p++ {
		lean.Part(full.PartBytes(p))
	}
	unread := 0
	for m := Msg(1); int(m) < len(full.nodes); m++ {
		n := full.nodes[m]
		var got Msg
		if kids[n.parent] == 1 {
			got = lean.Unread(n.parent, len(n.data))
			unread++
		} else {
			got = lean.Message(n.parent, n.data)
		}
		if got != m {
			t.Fatalf("node %d rebuilt as %d", m, got)
		}
	}
	if unread == 0 || unread == len(full.nodes)-1 {
		t.Fatalf("%d of %d nodes unread: the test needs both kinds", unread, len(full.nodes)-1)
	}
	full.Order()
	lean.Order()
	for _, a := range ps {
		if lean.Len(a) != full.Len(a) {
			t.Fatalf("Len(%q) = %d unread, %d read", full.Key(a), lean.Len(a), full.Len(a))
		}
		for _, b := range ps {
			if g, w := lean.Break(a, b), full.Break(a, b); g != w {
				t.Fatalf("Break(%q, %q) = %+v unread, %+v read", full.Key(a), full.Key(b), g, w)
			}
			if g, w := lean.Compare(a, b), full.Compare(a, b); g != w {
				t.Fatalf("Compare(%q, %q) = %d unread, %d read", full.Key(a), full.Key(b), g, w)
			}
		}
	}
	for m := Msg(1); int(m) < len(full.nodes); m++ {
		if kids[full.nodes[m].parent] == 1 {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("Data of unread node %d did not panic", m)
					}
				}()
				lean.Data(m)
			}()
			break
		}
	}
}

// A message's offset and a break's place agree with the key bytes.
func TestTree_Break(t *testing.T) {
	tr := NewTree()
	tools, sys := tr.Part([]byte(`[{"t":1}]`)), tr.Part([]byte(`{"s":1}`))
	m1 := tr.Message(Root, []byte(`{"u":1}`))
	m2 := tr.Message(m1, []byte(`{"a":1}`))
	m2b := tr.Message(m1, []byte(`{"a":2}`))
	a, b := Prompt{tools, sys, m2}, Prompt{tools, sys, m2b}
	br := tr.Break(a, b)
	if br.Where != InMessages || br.Index != 2 || br.Offset != len(`{"a":`) || br.Common != m1 {
		t.Errorf("Break = %+v, want messages, index 2, offset 5, common m1", br)
	}
	key := tr.Key(a)
	start := len(`[{"t":1}]`) + len(`{"s":1}`)
	if got := string(key[start+tr.Offset(m2, 2):]); got != `{"a":1}]` {
		t.Errorf("message 2 starts at %q", got)
	}
	if br := tr.Break(Prompt{tools, sys, m1}, a); br.Index != 2 || br.Shared != start+len(`[{"u":1}`) {
		t.Errorf("Break(prefix path) = %+v", br)
	}
	if br := tr.Break(a, Prompt{tr.Part([]byte(`[{"t":2}]`)), sys, m2}); br.Where != InTools || br.Offset != len(`[{"t":`) {
		t.Errorf("Break(other tools) = %+v", br)
	}
	if br := tr.Break(a, Prompt{tools, tr.Part([]byte(`{"s":2}`)), m2}); br.Where != InSystem || br.Shared != len(`[{"t":1}]`)+len(`{"s":`) {
		t.Errorf("Break(other system) = %+v", br)
	}
	if br := tr.Break(a, a); br.Where != Identical || br.Shared != len(key) {
		t.Errorf("Break(same) = %+v", br)
	}
	if tr.Message(m1, []byte(`{"a":1}`)) != m2 {
		t.Error("the same message after the same path is a new node")
	}
}

// Longest answers what comparing with every accepted earlier request
// answers, over random prompts, times (out of order, as concurrent
// branches' virtual clocks are) and lifetimes, with entries removed.
func TestSet_LongestMatchesEveryComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := 0; round < 20; round++ {
		tr := NewTree()
		s := tr.NewSet()
		var paths []Msg
		var all []*Entry
		lifetime := time.Duration(rng.IntN(60)) * time.Second
		for i := 0; i < 300; i++ {
			q := randPrompt(rng, tr, &paths)
			at := t0.Add(time.Duration(rng.IntN(100)) * time.Second)
			if rng.IntN(10) == 0 {
				at = time.Time{}
			}
			ok := func(e *Entry) bool { return Reusable(e.Ready, at, lifetime) }
			want := 0
			for _, e := range all {
				if e != nil && ok(e) {
					want = max(want, tr.Shared(q, e.Prompt))
				}
			}
			got, match := s.Longest(q, ok)
			if got != want {
				t.Fatalf("round %d, request %d: Longest = %d, want %d", round, i, got, want)
			}
			if got > 0 && (match == nil || !ok(match) || tr.Shared(q, match.Prompt) != got) {
				t.Fatalf("round %d, request %d: match %+v does not share %d", round, i, match, got)
			}
			all = append(all, s.Add(q, at.Add(time.Duration(rng.IntN(20))*time.Second), int64(i)))
			if k := rng.IntN(len(all)); rng.IntN(8) == 0 && all[k] != nil {
				s.Remove(all[k])
				all[k] = nil
			}
		}
	}
}

func TestReusable(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		ready, at time.Time
		lifetime  time.Duration
		want      bool
	}{
		{"finished before", t0, t0.Add(time.Second), time.Minute, true},
		{"finished as it starts", t0, t0, time.Minute, true},
		{"still running", t0.Add(time.Second), t0, time.Minute, false},
		{"at the lifetime", t0, t0.Add(time.Minute), time.Minute, true},
		{"expired", t0, t0.Add(time.Minute + 1), time.Minute, false},
		{"no lifetime", t0, t0.Add(time.Hour), 0, true},
		{"unknown start", t0.Add(time.Hour), time.Time{}, time.Minute, true},
	} {
		if got := Reusable(tt.ready, tt.at, tt.lifetime); got != tt.want {
			t.Errorf("%s: Reusable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestKey(t *testing.T) {
	if got := string(Key(nil, nil, nil)); got != "nullnull" {
		t.Errorf("Key() = %q", got)
	}
	if got := string(Key([]byte(`[1]`), []byte(`{"s"}`), [][]byte{[]byte(`{1}`), []byte(`{2}`)})); got != `[1]{"s"}[{1},{2}]` {
		t.Errorf("Key = %q", got)
	}
	if !bytes.Equal(Key([]byte("null"), nil, nil), Key(nil, nil, nil)) {
		t.Error("no tools is not null")
	}
}

// BenchmarkSet is one conversation of growing requests: each lookup and
// insert costs O(log n) comparisons, not one per earlier request.
func BenchmarkSet(b *testing.B) {
	tr := NewTree()
	s := tr.NewSet()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tools := tr.Part([]byte(`[{"type":"function"}]`))
	sys := tr.Part([]byte(`{"role":"system","content":"You are an analyst."}`))
	last := Root
	i := 0
	for b.Loop() {
		last = tr.Message(last, []byte(`{"role":"tool","content":"Region: revenue 4.2M, up 3% on Q2."}`))
		at := t0.Add(time.Duration(i) * time.Second)
		q := Prompt{tools, sys, last}
		s.Longest(q, func(e *Entry) bool { return Reusable(e.Ready, at, DefaultLifetime) })
		s.Add(q, at.Add(time.Second), int64(i))
		i++
		if tr.Depth(last) > 1000 {
			last = Root
		}
	}
}
