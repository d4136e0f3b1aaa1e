package main

import (
	"context"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

func TestDemoRun(t *testing.T) {
	f, out, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"demo"}); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	o := out.String()
	for _, want := range []string{"flowchart TD", "fork (compact context) growth, risks", "handoff analyst to writer", "fanout.missed", "fork.uneven"} {
		if !strings.Contains(o, want) {
			t.Errorf("demo output lacks %q:\n%s", want, o)
		}
	}
	if !strings.Contains(errOut.String(), "next: inspect graph") {
		t.Errorf("stderr lacks the next steps: %s", errOut)
	}
	// It names the call to ask about, not a placeholder: n2 starts the missed fan-out.
	if want := "try:  inspect ask --db " + f.DBPath + " n2 --dry-run"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q: %s", want, errOut)
	}
	db, err := store.Open(context.Background(), f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, _ := db.Runs(context.Background(), 0)
	if len(runs) != 1 || runs[0].Status != record.StatusOK {
		t.Errorf("runs = %+v, want the demo run, ok", runs)
	}
}
