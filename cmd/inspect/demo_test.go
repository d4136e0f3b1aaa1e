package main

import (
	"context"
	"math"
	"regexp"
	"strconv"
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
	db, err := store.Open(context.Background(), f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, _ := db.Runs(context.Background(), 0)
	if len(runs) != 1 || runs[0].Status != record.StatusOK {
		t.Fatalf("runs = %+v, want the demo run, ok", runs)
	}
	// It names the call to ask about, not a placeholder: n2 starts the
	// missed fan-out; the run id and --db are spelled out.
	if want := "try:  inspect ask " + runs[0].ID + " n2 --dry-run --db " + f.DBPath; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q: %s", want, errOut)
	}

	// --realtime waits the run's virtual time: its help says how long,
	// truthfully (issue 12, item 14: it said about 20 seconds for 24.7 s).
	help := NewCmdDemo(f, nil).Flags().Lookup("realtime").Usage
	m := regexp.MustCompile(`about (\d+) seconds`).FindStringSubmatch(help)
	if m == nil {
		t.Fatalf("--realtime help %q names no duration", help)
	}
	said, _ := strconv.Atoi(m[1])
	if got := runs[0].Elapsed().Seconds(); math.Abs(got-float64(said)) > 1 {
		t.Errorf("--realtime help says about %d seconds; the demo takes %.1f s", said, got)
	}
}
