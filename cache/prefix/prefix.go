// Package prefix is the one definition of what a provider's prompt cache
// can reuse, shared by the scripted model's cache simulation
// (runtime/scripted) and the cache analysis (cache/): both build Prompts in
// a Tree and ask a Set for the longest reusable prefix, so the cached
// tokens the scripted model reports and the prefix `inspect cache`
// predicts are the same number on every run.
//
// A prompt is what the cache compares, in order: the tools array, the
// system prompt (the leading system message), then the other messages.
// Its key bytes are the JSON of the tools ("null" when the request offers
// none), the system message's JSON ("" when there is none), then the other
// messages as a JSON array ("[m1,m2]", or "null" when there are none). The
// reusable prefix of a request is the longest common byte prefix of its key
// with the key of an earlier request of the same model that had finished
// when it started, within the cache lifetime (Reusable); a prefix stops at
// the first part that differs (tools, then system), as a provider's cache
// does, which for well-formed JSON is the byte-wise common prefix of the
// two keys. Tokens are bytes/4, the scripted model's count (DESIGN §5).
//
// Messages are interned in a Tree: a message node is one message after a
// given path of messages, so a conversation's requests share their
// history and a request is its last message. A Set keeps one model's
// earlier requests in trie order (tools, system, then the message path with
// a parent before its children and children by their bytes); in that order
// the prefix a request shares with an entry never grows while walking away
// from the request's place, so the longest one is found next to it:
// O(log n) comparisons of O(log depth) each, plus the entries a caller's
// filter skips, never a comparison with every earlier request. A reader
// that has built all its prompts first orders the tree once (Order), and
// each comparison is then of two integers; a message that is the only one
// after its path needs no bytes at all (Unread), only its length.
package prefix

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"time"

	"github.com/google/btree"
)

// DefaultLifetime is how long a finished request stays reusable by default
// (DESIGN §15): the option cache-lifetime of `inspect cache`, and the
// scripted model's simulated cache.
const DefaultLifetime = 5 * time.Minute

// Tokens is the token estimate of n key bytes: n/4, as the scripted model
// counts (DESIGN §5).
func Tokens(n int) int64 { return int64(n / 4) }

// Reusable reports whether a request that finished at ready can serve a
// request that starts at at: it had finished by then, no longer than
// lifetime before (lifetime ≤ 0: no limit). A zero at (a start the caller
// does not know) sees every earlier request.
func Reusable(ready, at time.Time, lifetime time.Duration) bool {
	if at.IsZero() {
		return true
	}
	return !ready.After(at) && (lifetime <= 0 || at.Sub(ready) <= lifetime)
}

// Msg is a message node of a Tree: a message after a path of messages.
// Root (0) is the empty path.
type Msg int32

// Root is the path of no messages.
const Root Msg = 0

// Part is an interned tools array or system message of a Tree.
type Part int32

// Prompt is one request as the cache compares it.
type Prompt struct {
	// Tools is the tools array's JSON ("null" when none); System the
	// leading system message's JSON ("" when none).
	Tools, System Part
	// Last is the last of the other messages (Root when there are none).
	Last Msg
}

type node struct {
	parent, jump Msg
	depth        int32
	unread       bool  // made by Unread: data is not known
	next         Msg   // the next node with the same hash (0: none)
	cum          int64 // key bytes of the message array through this node, without its closing bracket
	data         []byte
}

// Tree interns the parts and messages of prompts. The zero value is not
// usable; call NewTree. A Tree is not safe for concurrent use.
type Tree struct {
	seed  maphash.Seed
	nodes []node
	index map[uint64]Msg
	parts [][]byte
	pidx  map[uint64][]Part
	// rank and prank are the trie order of the nodes and the byte order
	// of the parts (Order); each is in force while its length is the
	// number of nodes or parts, so adding one falls back to the bytes.
	rank, prank []int32
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{seed: maphash.MakeSeed(), nodes: []node{{}}, index: map[uint64]Msg{}, pidx: map[uint64][]Part{}}
}

// Grow makes room for n more messages.
func (t *Tree) Grow(n int) { t.nodes = slices.Grow(t.nodes, n) }

// Part interns b (the tools array's or the system message's JSON) and
// returns its id; equal bytes give the same id. The tree keeps b: the
// caller must not change it.
func (t *Tree) Part(b []byte) Part {
	h := maphash.Bytes(t.seed, b)
	for _, p := range t.pidx[h] {
		if bytes.Equal(t.parts[p], b) {
			return p
		}
	}
	p := Part(len(t.parts))
	t.parts = append(t.parts, b)
	t.pidx[h] = append(t.pidx[h], p)
	return p
}

// PartBytes returns the bytes of part p.
func (t *Tree) PartBytes(p Part) []byte { return t.parts[p] }

// Message interns data (one message's JSON, without a separator) after the
// path prev and returns its node; the same data after the same path gives
// the same node. The tree keeps data: the caller must not change it.
func (t *Tree) Message(prev Msg, data []byte) Msg {
	h := maphash.Bytes(t.seed, data) ^ (uint64(prev)+1)*0x9E3779B97F4A7C15
	first := t.index[h]
	for m := first; m != Root; m = t.nodes[m].next {
		if t.nodes[m].parent == prev && bytes.Equal(t.nodes[m].data, data) {
			return m
		}
	}
	p := &t.nodes[prev]
	n := node{parent: prev, jump: prev, depth: p.depth + 1, next: first, cum: p.cum + 1 + int64(len(data)), data: data}
	if j1 := p.jump; prev != Root {
		if j2 := t.nodes[j1].jump; p.depth-t.nodes[j1].depth == t.nodes[j1].depth-t.nodes[j2].depth {
			n.jump = j2
		}
	}
	m := Msg(len(t.nodes))
	t.nodes = append(t.nodes, n)
	t.index[h] = m
	return m
}

// Unread adds a message of n bytes (without a separator) after the path
// prev whose bytes the caller did not read: it has a length and a place,
// so a prompt ending in it or after it has its key length, and the shared
// prefix of two prompts that part after it is measured, but it is never
// interned (Message never returns it) and never compared with another
// message. The caller promises that no other message is ever added after
// prev — the one message a reader found there needs no bytes, since
// nothing differs from it — and Data, Key and Compare panic when that was
// not so.
func (t *Tree) Unread(prev Msg, n int) Msg {
	p := &t.nodes[prev]
	nd := node{parent: prev, jump: prev, depth: p.depth + 1, unread: true, cum: p.cum + 1 + int64(n)}
	if j1 := p.jump; prev != Root {
		if j2 := t.nodes[j1].jump; p.depth-t.nodes[j1].depth == t.nodes[j1].depth-t.nodes[j2].depth {
			nd.jump = j2
		}
	}
	m := Msg(len(t.nodes))
	t.nodes = append(t.nodes, nd)
	return m
}

// Order puts every node and part in the order a Set keeps them (see the
// package doc) once, so that Compare is an integer comparison until the
// next node or part is added: after a reader has built all its prompts,
// a Set's insertions and removals compare no bytes. Each message with
// siblings is compared with them here, once.
func (t *Tree) Order() {
	n := len(t.nodes)
	// The children of each node, by a counting sort on the parent (a
	// parent is always added before its children).
	start := make([]int32, n+1)
	for m := 1; m < n; m++ {
		start[t.nodes[m].parent+1]++
	}
	for i := 1; i <= n; i++ {
		start[i] += start[i-1]
	}
	kids := make([]Msg, max(n-1, 0))
	fill := append([]int32(nil), start[:n]...)
	for m := 1; m < n; m++ {
		p := t.nodes[m].parent
		kids[fill[p]] = Msg(m)
		fill[p]++
	}
	for p := 0; p < n; p++ {
		if g := kids[start[p]:start[p+1]]; len(g) > 1 {
			sort.Slice(g, func(i, j int) bool { return bytes.Compare(t.Data(g[i]), t.Data(g[j])) < 0 })
		}
	}
	// Preorder: a parent before its children, children by their bytes.
	rank := make([]int32, n)
	stack := []Msg{Root}
	for r := int32(0); len(stack) > 0; r++ {
		m := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		rank[m] = r
		g := kids[start[m]:start[m+1]]
		for i := len(g) - 1; i >= 0; i-- {
			stack = append(stack, g[i])
		}
	}
	t.rank = rank
	ps := make([]Part, len(t.parts))
	for i := range ps {
		ps[i] = Part(i)
	}
	sort.Slice(ps, func(i, j int) bool { return bytes.Compare(t.parts[ps[i]], t.parts[ps[j]]) < 0 })
	t.prank = make([]int32, len(ps))
	for r, p := range ps {
		t.prank[p] = int32(r)
	}
}

// Parent returns the path m extends (Root for a first message or Root).
func (t *Tree) Parent(m Msg) Msg { return t.nodes[m].parent }

// Depth is the number of messages on the path m.
func (t *Tree) Depth(m Msg) int { return int(t.nodes[m].depth) }

// Data returns the JSON of the last message of path m (nil for Root). It
// panics for a message added by Unread.
func (t *Tree) Data(m Msg) []byte {
	if t.nodes[m].unread {
		panic(fmt.Sprintf("internal error: the bytes of message node %d were not read", m))
	}
	return t.nodes[m].data
}

// Ancestor returns the path of the first d messages of m (d ≤ Depth(m)).
func (t *Tree) Ancestor(m Msg, d int) Msg {
	for int(t.nodes[m].depth) > d {
		if j := t.nodes[m].jump; int(t.nodes[j].depth) >= d {
			m = j
		} else {
			m = t.nodes[m].parent
		}
	}
	return m
}

// diverge returns where paths x and y part: their longest common path and
// the next message of each on it (Root when that path ends there).
func (t *Tree) diverge(x, y Msg) (common, nx, ny Msg) {
	dx, dy := t.nodes[x].depth, t.nodes[y].depth
	switch {
	case dx > dy:
		if a := t.Ancestor(x, int(dy)); a == y {
			return y, t.Ancestor(x, int(dy)+1), Root
		} else {
			x = a
		}
	case dy > dx:
		if a := t.Ancestor(y, int(dx)); a == x {
			return x, Root, t.Ancestor(y, int(dx)+1)
		} else {
			y = a
		}
	}
	if x == y {
		return x, Root, Root
	}
	for t.nodes[x].parent != t.nodes[y].parent {
		if jx, jy := t.nodes[x].jump, t.nodes[y].jump; jx != jy {
			x, y = jx, jy
		} else {
			x, y = t.nodes[x].parent, t.nodes[y].parent
		}
	}
	return t.nodes[x].parent, x, y
}

// msgLen is the key length of the message array of path m.
func (t *Tree) msgLen(m Msg) int {
	if m == Root {
		return len("null")
	}
	return int(t.nodes[m].cum) + 1
}

// Len is the length of p's key in bytes.
func (t *Tree) Len(p Prompt) int {
	return len(t.parts[p.Tools]) + len(t.parts[p.System]) + t.msgLen(p.Last)
}

// Offset is where message k (1-based) of path m starts in the key of a
// prompt with m, counted from the start of its message array.
func (t *Tree) Offset(m Msg, k int) int {
	if k <= 1 {
		return 1
	}
	return int(t.nodes[t.Ancestor(m, k-1)].cum) + 1
}

// Compare orders prompts as a Set keeps them (see the package doc): -1, 0
// or +1.
func (t *Tree) Compare(a, b Prompt) int {
	ranked := len(t.prank) == len(t.parts)
	if a.Tools != b.Tools {
		if ranked {
			return cmp.Compare(t.prank[a.Tools], t.prank[b.Tools])
		}
		return bytes.Compare(t.parts[a.Tools], t.parts[b.Tools])
	}
	if a.System != b.System {
		if ranked {
			return cmp.Compare(t.prank[a.System], t.prank[b.System])
		}
		return bytes.Compare(t.parts[a.System], t.parts[b.System])
	}
	if a.Last == b.Last {
		return 0
	}
	if len(t.rank) == len(t.nodes) {
		return cmp.Compare(t.rank[a.Last], t.rank[b.Last])
	}
	_, na, nb := t.diverge(a.Last, b.Last)
	switch {
	case na == Root:
		return -1 // a is a path b extends: the parent first
	case nb == Root:
		return 1
	}
	return bytes.Compare(t.Data(na), t.Data(nb))
}

// Where names the part of a key.
type Where int

// The parts of a key, in order.
const (
	InTools    Where = iota + 1 // the tools array
	InSystem                    // the system message
	InMessages                  // the other messages
	Identical                   // the keys are the same: no break
)

// Break says where two prompts' keys part.
type Break struct {
	// Shared is the length of their common prefix in bytes.
	Shared int
	// Where is the part it ends in.
	Where Where
	// Offset is where the break is within that part: a byte offset in the
	// tools array or the system message; in the messages, the offset in
	// the message Index.
	Offset int
	// Index is, in the messages, the 1-based number of the first message
	// of a that differs from b's (or that b lacks); Depth(a)+1 when a
	// ends where b goes on (a's array closes where b's continues).
	Index int
	// Common is the path both share.
	Common Msg
}

// Break returns where the keys of a and b part, seen from a.
func (t *Tree) Break(a, b Prompt) Break {
	ta, tb := t.parts[a.Tools], t.parts[b.Tools]
	if a.Tools != b.Tools {
		n := commonPrefix(ta, tb)
		return Break{Shared: n, Where: InTools, Offset: n}
	}
	sa, sb := t.parts[a.System], t.parts[b.System]
	if a.System != b.System {
		n := commonPrefix(sa, sb)
		return Break{Shared: len(ta) + n, Where: InSystem, Offset: n}
	}
	base := len(ta) + len(sa)
	if a.Last == b.Last {
		return Break{Shared: base + t.msgLen(a.Last), Where: Identical, Common: a.Last}
	}
	common, na, nb := t.diverge(a.Last, b.Last)
	br := Break{Where: InMessages, Common: common, Index: t.Depth(common) + 1}
	switch {
	case common == Root && (na == Root || nb == Root):
		br.Shared = base // "null" against "[…": nothing of the array is shared
	case na == Root || nb == Root:
		br.Shared = base + int(t.nodes[common].cum)
	default:
		off := commonPrefix(t.Data(na), t.Data(nb))
		br.Offset = off
		br.Shared = base + int(t.nodes[common].cum) + 1 + off
	}
	return br
}

// Shared is the length of the common prefix of a's and b's keys in bytes.
func (t *Tree) Shared(a, b Prompt) int { return t.Break(a, b).Shared }

// Key returns p's key bytes (for tests and for showing a prompt; the
// comparisons never build it).
func (t *Tree) Key(p Prompt) []byte {
	var msgs [][]byte
	for m := p.Last; m != Root; m = t.nodes[m].parent {
		msgs = append(msgs, t.Data(m))
	}
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	return Key(t.parts[p.Tools], t.parts[p.System], msgs)
}

// Key is the key of a prompt with these parts (see the package doc): the
// tools array ("null" when empty), the system message, the messages as a
// JSON array ("null" when there are none).
func Key(tools, system []byte, msgs [][]byte) []byte {
	if len(tools) == 0 {
		tools = []byte("null")
	}
	b := append(append([]byte(nil), tools...), system...)
	if len(msgs) == 0 {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && bytes.Equal(a[i:i+64], b[i:i+64]) { // memeq a chunk at a time
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// Entry is a request a Set holds.
type Entry struct {
	Prompt
	// Ready is when the request finished: from then on it can be reused.
	Ready time.Time
	// ID is the caller's name for the request (an llm node's seq).
	ID int64
	n  int // arrival order, for equal prompts
}

// Set is one model's cache: its earlier requests in trie order.
type Set struct {
	t  *Tree
	bt *btree.BTreeG[*Entry]
	n  int
}

// NewSet returns an empty set of requests of t's prompts.
func (t *Tree) NewSet() *Set {
	s := &Set{t: t}
	s.bt = btree.NewG(16, func(a, b *Entry) bool {
		if c := t.Compare(a.Prompt, b.Prompt); c != 0 {
			return c < 0
		}
		return a.n < b.n
	})
	return s
}

// Len is the number of requests the set holds.
func (s *Set) Len() int { return s.bt.Len() }

// Add puts a request into the set and returns its entry.
func (s *Set) Add(p Prompt, ready time.Time, id int64) *Entry {
	s.n++
	e := &Entry{Prompt: p, Ready: ready, ID: id, n: s.n}
	s.bt.ReplaceOrInsert(e)
	return e
}

// Remove takes e out of the set.
func (s *Set) Remove(e *Entry) { s.bt.Delete(e) }

// Longest returns the longest prefix q shares with an entry that ok
// accepts (nil: every entry), in bytes, and that entry (nil when none
// shares anything). Walking out from q's place on each side, it stops at
// the first accepted entry, or as soon as no entry further out can share
// more than the best found; of two entries sharing as much, the later
// arrival wins.
func (s *Set) Longest(q Prompt, ok func(*Entry) bool) (int, *Entry) {
	pivot := &Entry{Prompt: q} // n 0: before every entry with q's prompt
	best := 0
	var match *Entry
	s.bt.DescendLessOrEqual(pivot, func(e *Entry) bool {
		n := s.t.Shared(q, e.Prompt)
		if n == 0 {
			return false
		}
		if ok == nil || ok(e) {
			best, match = n, e
			return false
		}
		return true
	})
	s.bt.AscendGreaterOrEqual(pivot, func(e *Entry) bool {
		n := s.t.Shared(q, e.Prompt)
		accepted := n > 0 && n >= best && (ok == nil || ok(e))
		if accepted && (n > best || match == nil || e.n > match.n) {
			best, match = n, e
		}
		return !accepted && n > best
	})
	return best, match
}
