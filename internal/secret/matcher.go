package secret

// matcher is the keyword prefilter: an Aho-Corasick automaton over the
// rules' keywords, ASCII case folded, that says in one pass over a text
// which rules it may hold a secret of, and where (gitleaks prefilters the
// same way; the places let each rule's regexp look near them only).
// Its transitions are a full table over byte classes (the bytes some
// keyword holds, and one class for every other byte), so the pass is a
// table look-up a byte.
type matcher struct {
	class   [256]uint8
	nclass  int
	delta   []int32 // state*nclass + class → the next state, times nclass
	out     [][]hit // state → the keywords that end there (fail chain merged)
	hasOut  []bool  // state*nclass → len(out[state]) > 0
	nrules  int
	noWords bool
}

// hit is a keyword of rule, len bytes long, that ends where it is found.
type hit struct{ rule, len int }

// kwUnit packs a keyword's place and length into one int (keywords are
// shorter than it; longer ones are cut to it, which only widens a look).
const kwUnit = 64

func newMatcher(words []string, owners [][]int, nrules int) *matcher {
	m := &matcher{nrules: nrules, noWords: len(words) == 0}
	// byte classes: 0 is "no keyword holds it"
	m.nclass = 1
	for _, w := range words {
		for i := 0; i < len(w); i++ {
			c := w[i]
			if m.class[c] == 0 {
				m.class[c] = uint8(m.nclass)
				m.nclass++
			}
		}
	}
	for c := 'A'; c <= 'Z'; c++ { // fold ASCII upper case onto lower
		m.class[c] = m.class[c+'a'-'A']
	}
	// the trie
	type node struct {
		next map[uint8]int32
		out  []hit
	}
	trie := []node{{next: map[uint8]int32{}}}
	for i, w := range words {
		s := int32(0)
		for j := 0; j < len(w); j++ {
			c := m.class[w[j]]
			n, ok := trie[s].next[c]
			if !ok {
				n = int32(len(trie))
				trie = append(trie, node{next: map[uint8]int32{}})
				trie[s].next[c] = n
			}
			s = n
		}
		for _, r := range owners[i] {
			trie[s].out = append(trie[s].out, hit{r, min(len(w), kwUnit-1)})
		}
	}
	// breadth first: fail links, merged outputs, the full table
	n := len(trie)
	m.delta = make([]int32, n*m.nclass)
	m.out = make([][]hit, n)
	m.hasOut = make([]bool, n)
	fail := make([]int32, n)
	queue := []int32{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		out := append([]hit(nil), trie[s].out...)
		if s != 0 {
			out = append(out, m.out[fail[s]]...)
		}
		m.out[s], m.hasOut[s] = out, len(out) > 0
		for c := 0; c < m.nclass; c++ {
			next, ok := trie[s].next[uint8(c)]
			switch {
			case ok:
				if s == 0 {
					fail[next] = 0
				} else {
					fail[next] = m.delta[int(fail[s])*m.nclass+c]
				}
				m.delta[int(s)*m.nclass+c] = next
				queue = append(queue, next)
			case s == 0:
				m.delta[c] = 0
			default:
				m.delta[int(s)*m.nclass+c] = m.delta[int(fail[s])*m.nclass+c]
			}
		}
	}
	// premultiplied: the scan adds a class to a state without multiplying
	flags := make([]bool, n*m.nclass)
	for st := 0; st < n; st++ {
		flags[st*m.nclass] = m.hasOut[st]
	}
	for i := range m.delta {
		m.delta[i] *= int32(m.nclass)
	}
	m.hasOut = flags
	return m
}

// match returns, for each rule, the keywords of it that s holds, in the
// order found, each as its start*kwUnit + its length (empty for a rule
// none of whose keywords s holds). occ is reused when it has room.
func (m *matcher) match(s string, occ [][]int) [][]int {
	if cap(occ) < m.nrules {
		occ = make([][]int, m.nrules)
	}
	occ = occ[:m.nrules]
	for i := range occ {
		occ[i] = occ[i][:0]
	}
	if m.noWords {
		return occ
	}
	st := int32(0) // a state times nclass
	delta, class, flags := m.delta, &m.class, m.hasOut
	for i := 0; i < len(s); i++ {
		st = delta[st+int32(class[s[i]])]
		if flags[st] {
			for _, h := range m.out[int(st)/m.nclass] {
				at := (i+1-h.len)*kwUnit + h.len
				if o := occ[h.rule]; len(o) == 0 || o[len(o)-1] != at {
					occ[h.rule] = append(o, at)
				}
			}
		}
	}
	return occ
}
