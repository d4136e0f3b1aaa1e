package main

import (
	"runtime/debug"
	"testing"
)

// While runs load, the collector runs less often; the last holder to
// release it (commands share a process under inspect mcp; inspect graph
// holds it to its Factory's Close) restores the percentage, once however
// often released, and GOGC set by the user is left alone.
func TestCollectLess(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	f := &Factory{Getenv: func(string) string { return "" }}
	first := collectLess(f)
	f.atClose(collectLess(f))
	if p := percent(); p != gcLoad {
		t.Fatalf("while loading: GOGC %d, want %d", p, gcLoad)
	}
	first()
	first()
	if p := percent(); p != gcLoad {
		t.Fatalf("held to the command's end: GOGC %d, want %d", p, gcLoad)
	}
	f.Close()
	if p := percent(); p != 150 {
		t.Fatalf("after the command: GOGC %d, want 150 back", p)
	}
	user := &Factory{Getenv: func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}}
	collectLess(user)()
	if p := percent(); p != 150 {
		t.Fatalf("with GOGC set: %d, want it left alone", p)
	}
}
