package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestCollect runs inspect collect on a loopback port and sends it what
// real exporters sent (the LangGraph fixture line by line as JSON, gzip;
// the AI SDK one as protobuf), with a body that is not OTLP in between:
// that one is answered 400 with the reason and collecting goes on; Ctrl-C
// (the context ending) flushes, and each trace is a run.
func TestCollect(t *testing.T) {
	f, out, errOut := testFactory(t)
	ctx, stop := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- collectRun(ctx, &CollectOptions{F: f, Listen: "127.0.0.1:0", Ready: func(a string) { ready <- a }})
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("collect ended before listening: %v", err)
	}
	url := "http://" + addr + "/v1/traces"
	post := func(ctype string, body []byte, gz bool) (int, string) {
		t.Helper()
		if gz {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(body)
			zw.Close()
			body = b.Bytes()
		}
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", ctype)
		if gz {
			req.Header.Set("Content-Encoding", "gzip")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	lines, err := os.Open("../../importers/otlp/testdata/langgraph-supervisor.otlp.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer lines.Close()
	sc := bufio.NewScanner(lines)
	sc.Buffer(nil, 1<<24)
	n := 0
	for sc.Scan() {
		if code, body := post("application/json", sc.Bytes(), true); code != 200 {
			t.Fatalf("line %d: %d %s", n+1, code, body)
		}
		n++
		if n == 3 {
			code, body := post("application/json", []byte(`{"hello": "world"}`), false)
			if code != 400 || !strings.Contains(body, "not OTLP") {
				t.Errorf("not-OTLP JSON: %d %s, want 400 saying it is not OTLP", code, body)
			}
			if code, body := post("text/plain", []byte("hi"), false); code != 415 {
				t.Errorf("text/plain: %d %s, want 415", code, body)
			}
		}
	}
	pb, err := os.ReadFile("../../importers/otlp/testdata/aisdk.otlp.pb")
	if err != nil {
		t.Fatal(err)
	}
	if code, body := post("application/x-protobuf", pb, false); code != 200 {
		t.Fatalf("protobuf: %d %q", code, body)
	}
	stop() // each post was answered once its spans were taken: Ctrl-C's flush writes them all
	if err := <-done; err != nil {
		t.Fatalf("collect returned %v after Ctrl-C, want nil (exit 0)", err)
	}
	log := errOut.String()
	for _, want := range []string{"listening on http://127.0.0.1:", "agents supervisor, research_expert, math_expert", "agents planner, researcher", "ended", "stopped: 2 traces recorded"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	db, err := f.Store(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(t.Context(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 {
		t.Fatalf("%d runs, want 2 (one per trace, each rewritten as it grew)", len(runs))
	}
	for _, r := range runs {
		g := commandText(t, f, out, "graph", r.ID)
		if !strings.Contains(g, "final: ") {
			t.Errorf("run %s graph has no final answer:\n%s", r.ID, g)
		}
	}
}
