package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/importerstest"
)

// startCollect runs inspect collect on a free loopback port until the
// test ends, and returns its traces URL and its stop (Ctrl-C).
func startCollect(t *testing.T, f *Factory) (string, func()) {
	t.Helper()
	ctx, stop := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- collectRun(ctx, &CollectOptions{F: f, Listen: "127.0.0.1:0", Ready: func(a string) { ready <- a }})
	}()
	select {
	case addr := <-ready:
		stopped := false
		end := func() {
			if !stopped {
				stopped = true
				stop()
				if err := <-done; err != nil {
					t.Errorf("collect: %v", err)
				}
			}
		}
		t.Cleanup(end)
		return "http://" + addr + "/v1/traces", end
	case err := <-done:
		t.Fatalf("collect ended before listening: %v", err)
	}
	return "", nil
}

// TestCollect_HostCheck: inspect collect took exports addressed to any
// name, so a web page that rebinds its DNS name to 127.0.0.1 could post
// traces into the database (issue 23, item 3). On loopback it answers
// only its loopback names, as serve --otlp does; others get 403.
func TestCollect_HostCheck(t *testing.T) {
	f, _, _ := testFactory(t)
	url, stop := startCollect(t, f)
	pb, err := os.ReadFile("../../importers/otlp/testdata/aisdk.otlp.pb")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		host string
		want int
	}{{"evil.example:4318", 403}, {"127.0.0.1.nip.io", 403}, {"", 200}, {"localhost", 200}} {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(pb))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tt.host != "" {
			req.Host = tt.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Host %q: %d %q, want %d", tt.host, resp.StatusCode, b, tt.want)
		}
	}
	stop()
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if runs, err := db.Runs(t.Context(), 0); err != nil || len(runs) != 1 {
		t.Errorf("%d runs (%v); want the one trace the loopback names posted", len(runs), err)
	}
}

// TestCollect_DeepTrace: a POST of a trace nesting agents 5,000 deep made
// a 167 MB database (issue 23, item 2). Collected, it records 16 levels
// and the rest flat: the file stays small.
func TestCollect_DeepTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("posts a trace of 10,000 spans")
	}
	f, _, _ := testFactory(t)
	url, stop := startCollect(t, f)
	resp, err := http.Post(url, "application/json", strings.NewReader(importerstest.DeepTrace(5000)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST: %d %q", resp.StatusCode, b)
	}
	stop()
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(t.Context(), 0)
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs (%v), want one", len(runs), err)
	}
	g, err := graph.Load(t.Context(), db, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	deepest := 0
	for _, n := range g.Nodes {
		deepest = max(deepest, n.Depth)
	}
	if deepest != importers.MaxDepth {
		t.Errorf("deepest node at depth %d, want %d", deepest, importers.MaxDepth)
	}
	f.Close()
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(f.DBPath + suffix); err == nil {
			size += fi.Size()
		}
	}
	if size > 32<<20 {
		t.Errorf("the database is %d bytes after a 5,000-deep trace; want under 32 MiB", size)
	}
}
