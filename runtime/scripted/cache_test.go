package scripted

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// The sorted simulated cache answers exactly what comparing a request with
// every earlier one answers: the longest prefix shared with a request ready
// at the start, over random keys (many shared prefixes, repeats) and times
// (out of order, as concurrent branches' virtual clocks are).
func TestPrompt_LongestMatchesEveryComparison(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type entry struct {
		key   []byte
		ready time.Time
	}
	for round := 0; round < 20; round++ {
		p := newPrompt()
		var all []entry
		for i := 0; i < 300; i++ {
			key := make([]byte, rng.IntN(40))
			for j := range key {
				key[j] = "ab"[rng.IntN(2)]
			}
			at := t0.Add(time.Duration(rng.IntN(100)) * time.Second)
			if rng.IntN(10) == 0 {
				at = time.Time{} // sees every earlier request
			}
			want := 0
			for _, e := range all {
				if at.IsZero() || !e.ready.After(at) {
					want = max(want, commonPrefix(e.key, key))
				}
			}
			if got := p.longest(key, at); got != want {
				t.Fatalf("round %d, request %d: longest = %d, want %d", round, i, got, want)
			}
			ready := at.Add(time.Duration(rng.IntN(20)) * time.Second)
			p.add(key, ready)
			all = append(all, entry{key, ready})
		}
	}
}

// BenchmarkPrompt is one conversation of growing requests: each lookup and
// insert costs O(log n) comparisons, not one per earlier request.
func BenchmarkPrompt(b *testing.B) {
	p := newPrompt()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	key := []byte(`{"tools":[],"messages":[`)
	i := 0
	for b.Loop() {
		key = append(key, `{"role":"tool","content":"Region: revenue 4.2M, up 3% on Q2."},`...)
		at := t0.Add(time.Duration(i) * time.Second)
		p.longest(key, at)
		p.add(bytes.Clone(key), at.Add(time.Second))
		i++
		if len(key) > 64<<10 {
			key = key[:24]
		}
	}
}
