package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/record"
)

// seedPageRuns records n runs into a real file: run i starts i minutes
// after t0, takes i%7+1 seconds, spends 1000+i*37%500 tokens in, has agent
// "a<i%3>", and is ok, error or (i%10==9) cancelled.
func seedPageRuns(t *testing.T, n int) *DB {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	t0 := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	for i := range n {
		start := t0.Add(time.Duration(i) * time.Minute)
		rec, err := db.CreateRun(ctx, &record.Run{ID: fmt.Sprintf("run%03d", i), Started: start, Tasks: []string{fmt.Sprintf("task number %d ÉTÉ", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := rec.AddNode(ctx, &record.Node{Kind: record.KindLLM, Agent: fmt.Sprintf("a%d", i%3), Started: start, Ended: start.Add(time.Second),
			LLM: &record.LLM{Model: "m", Usage: record.Usage{In: int64(1000 + i*37%500), Out: 10}}}); err != nil {
			t.Fatal(err)
		}
		st := []record.Status{record.StatusOK, record.StatusError}[i%2]
		if i%10 == 9 {
			st = record.StatusCancelled
		}
		if err := rec.Finish(ctx, st, "", start.Add(time.Duration(i%7+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	return db
}

func ids(runs []RunSummary) string {
	var out []string
	for _, r := range runs {
		out = append(out, r.ID)
	}
	return strings.Join(out, " ")
}

func TestPageRuns(t *testing.T) {
	db := seedPageRuns(t, 30)
	ctx := context.Background()
	tests := []struct {
		name    string
		q       RunQuery
		want    string
		matched int
	}{
		{"newest first", RunQuery{Limit: 3}, "run029 run028 run027", 30},
		{"second page", RunQuery{Limit: 3, Offset: 3}, "run026 run025 run024", 30},
		{"oldest first", RunQuery{Limit: 2, Asc: true}, "run000 run001", 30},
		// elapsed i%7+1 s: 7 s for i = 6, 13, 20, 27; ties newest first
		{"longest first", RunQuery{Order: OrderElapsed, Limit: 4}, "run027 run020 run013 run006", 30},
		// tokens 1000+(i*37)%500+10: largest for i=27 (999%500 = 499), then i=13 (481)
		{"most tokens", RunQuery{Order: OrderTokens, Limit: 2}, "run027 run013", 30},
		{"fewest tokens", RunQuery{Order: OrderTokens, Asc: true, Limit: 1}, "run000", 30},
		{"status ascending", RunQuery{Order: OrderStatus, Asc: true, Limit: 3}, "run029 run019 run009", 30},
		{"status filter", RunQuery{Status: record.StatusCancelled}, "run029 run019 run009", 3},
		{"agent filter", RunQuery{Agent: "a2", Limit: 2}, "run029 run026", 10},
		{"text, ASCII folded", RunQuery{Text: "NUMBER 2", Limit: 3}, "run029 run028 run027", 11},
		{"text, exact non-ASCII", RunQuery{Text: "ÉTÉ", Limit: 1}, "run029", 30},
		{"text in the id", RunQuery{Text: "run01"}, "run019 run018 run017 run016 run015 run014 run013 run012 run011 run010", 10},
		{"past the end", RunQuery{Limit: 5, Offset: 40}, "", 30},
		{"filtered past the end", RunQuery{Agent: "a1", Limit: 5, Offset: 40}, "", 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := db.PageRuns(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(p.Runs); got != tt.want {
				t.Errorf("PageRuns(%+v) = %s, want %s", tt.q, got, tt.want)
			}
			if p.Matched != tt.matched || p.All != 30 {
				t.Errorf("PageRuns(%+v) matched %d of %d, want %d of 30", tt.q, p.Matched, p.All, tt.matched)
			}
		})
	}
	if _, err := db.PageRuns(ctx, RunQuery{Order: "cost"}); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Errorf("an unknown order: %v", err)
	}
	// a page carries what Runs says of each run
	all, err := db.Runs(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.PageRuns(ctx, RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		a, b := fmt.Sprintf("%+v", all[i]), fmt.Sprintf("%+v", p.Runs[i])
		if a != b {
			t.Fatalf("run %d: PageRuns %s, Runs %s", i, b, a)
		}
	}
	f, err := db.Facets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(f.Sources, f.Agents, f.Running); got != "[inspect] [a0 a1 a2] false" {
		t.Errorf("Facets = %s", got)
	}
}
