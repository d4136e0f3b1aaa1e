package cache

import "testing"

// TestSeqMap_Window: a map of a window late in a long run (inspect show
// of n999945 of a 1M-node run reads the call's few hundred neighbours)
// holds room for the window's seqs, not for every seq from 1: before, the
// three maps of one call's analysis each grew a slice of a million
// entries, 0.4–1.3 s of the show. Seqs before the window or far past it
// still read back, from the map beside the slice.
func TestSeqMap_Window(t *testing.T) {
	const first, last = 9_999_000, 9_999_400
	var m seqMap[int64]
	m.reserve(first, last)
	for s := int64(first); s <= last; s += 3 {
		m.set(s, s*2)
	}
	m.set(5, 10)       // before the window
	m.set(last+100, 7) // past it, within reach: the slice grows
	m.set(1<<40, 1)    // far past it
	if c := cap(m.s); c > 4*(last-first+100) {
		t.Errorf("a window of %d seqs holds room for %d", last-first+1, c)
	}
	for s := int64(first); s <= last; s++ {
		want := int64(0)
		if (s-first)%3 == 0 {
			want = s * 2
		}
		if got := m.get(s); got != want {
			t.Fatalf("get(%d) = %d, want %d", s, got, want)
		}
	}
	if m.get(5) != 10 || m.get(last+100) != 7 || m.get(1<<40) != 1 || m.get(6) != 0 || m.get(first-1) != 0 {
		t.Errorf("outside the window: %d %d %d %d %d", m.get(5), m.get(last+100), m.get(1<<40), m.get(6), m.get(first-1))
	}
	// Without reserve it is the dense map from 1 it always was.
	var d seqMap[int64]
	d.set(3, 9)
	if d.get(3) != 9 || d.base != 0 {
		t.Errorf("dense map: get(3) = %d, base %d", d.get(3), d.base)
	}
}
