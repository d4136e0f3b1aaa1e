package wasm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/goccy/go-graphviz"
	"github.com/goccy/go-graphviz/cgraph"
	"github.com/goccy/go-graphviz/internal/wasm"
)

// A module that fails to load (here: bytes that are not WebAssembly) makes
// the first load and every later entry point return an error, the same
// one each time; nothing panics, neither then nor at a later call.
// (Patched for inspect; see PATCHES.md.)
func TestLoad_FailsWithAnError(t *testing.T) {
	wasm.SetModuleBytes([]byte("not a WebAssembly module"))
	first := graphviz.Load(t.TempDir())
	if first == nil {
		t.Fatal("Load of a broken module returned no error")
	}
	if err := graphviz.Load(""); !errors.Is(err, first) {
		t.Errorf("second Load: %v, want the first load's %v", err, first)
	}
	if _, err := graphviz.New(context.Background()); err == nil || err.Error() != first.Error() {
		t.Errorf("New: %v, want %v", err, first)
	}
	if _, err := cgraph.ParseBytes([]byte("digraph { a -> b }")); err == nil || err.Error() != first.Error() {
		t.Errorf("ParseBytes: %v, want %v", err, first)
	}
	if _, err := wasm.NewGraphDescriptor(context.Background()); err == nil {
		t.Error("a call into the module that failed to load returned no error")
	}
}
