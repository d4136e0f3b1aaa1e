package main

import (
	"runtime/debug"
	"testing"
)

// While commands hold a loaded run, the collector runs less often; the
// last to close (commands share a process under inspect mcp) restores the
// percentage, and GOGC set by the user is left alone.
func TestCollectLess(t *testing.T) {
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	env := func(string) string { return "" }
	first, second := &Factory{Getenv: env}, &Factory{Getenv: env}
	collectLess(first)
	collectLess(second)
	if p := percent(); p != gcLoad {
		t.Fatalf("while loaded: GOGC %d, want %d", p, gcLoad)
	}
	first.Close()
	if p := percent(); p != gcLoad {
		t.Fatalf("one command still under way: GOGC %d, want %d", p, gcLoad)
	}
	second.Close()
	if p := percent(); p != 150 {
		t.Fatalf("after the commands: GOGC %d, want 150 back", p)
	}
	user := &Factory{Getenv: func(k string) string {
		if k == "GOGC" {
			return "50"
		}
		return ""
	}}
	collectLess(user)
	if p := percent(); p != 150 {
		t.Fatalf("with GOGC set: %d, want it left alone", p)
	}
	user.Close()
}
