package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/runtime/runtimetest"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// fleetJSON is the part of inspect fleet --format json the tests read.
type fleetJSON struct {
	Runs         int            `json:"runs"`
	PreviousRuns *int           `json:"previous_runs"`
	Sources      map[string]int `json:"sources"`
	Rules        []struct {
		Rule     string  `json:"rule"`
		Agent    string  `json:"agent"`
		Source   string  `json:"source"`
		Runs     int     `json:"runs"`
		Share    float64 `json:"share"`
		Findings int     `json:"findings"`
		Total    struct {
			ElapsedMS int64 `json:"elapsed_ms"`
			Tokens    int64 `json:"tokens"`
		} `json:"total"`
		Examples []struct {
			Run   string   `json:"run"`
			Nodes []string `json:"nodes"`
		} `json:"examples"`
	} `json:"rules"`
}

func recordFixtures(t *testing.T, f *Factory, fixtures ...string) {
	t.Helper()
	for _, fx := range fixtures {
		dir := filepath.Join(t.TempDir(), fx)
		if err := runtimetest.CopyDir(filepath.Join("..", "..", "fixtures", fx), dir); err != nil {
			t.Fatal(err)
		}
		if code := run(t.Context(), f, []string{"run", dir, "--script", filepath.Join(dir, "script.yaml"), "--db", f.DBPath}); code != ExitOK {
			t.Fatalf("run %s: exit %d: %s", fx, code, f.IO.ErrOut)
		}
	}
}

func fleetOf(t *testing.T, f *Factory, out *bytes.Buffer, args ...string) (fleetJSON, int) {
	t.Helper()
	out.Reset()
	code := run(t.Context(), f, append(append([]string{"fleet", "--format", "json"}, args...), "--db", f.DBPath))
	var doc fleetJSON
	if err := json.Unmarshal([]byte(out.String()), &doc); err != nil {
		t.Fatalf("inspect fleet %v: exit %d, not JSON: %v\n%s\n%s", args, code, err, out.String(), f.IO.ErrOut)
	}
	return doc, code
}

// inspect fleet over recorded runs: one row per rule × agent × source,
// each run's findings counted once per row, prices summed; each row
// agrees with inspect audit of its example runs; --fail-on-rate gates.
func TestFleet(t *testing.T) {
	f, out, errOut := testFactory(t)
	recordFixtures(t, f, "audit-handoff-loop", "audit-handoff-loop", "audit-fork-uneven", "handoff-chain")
	doc, code := fleetOf(t, f, out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if doc.Runs != 4 || doc.Sources["inspect"] != 4 || doc.PreviousRuns != nil {
		t.Fatalf("runs %d sources %v previous %v", doc.Runs, doc.Sources, doc.PreviousRuns)
	}
	if len(doc.Rules) == 0 {
		t.Fatal("no rows: the audit fixtures have findings")
	}
	loop := false
	for _, r := range doc.Rules {
		if r.Runs < 1 || r.Runs > 4 || r.Share != float64(r.Runs)/4 || len(r.Examples) == 0 || r.Source != "inspect" {
			t.Errorf("row %+v", r)
		}
		if r.Rule == "handoff.loop" {
			loop = true
			if r.Runs != 2 {
				t.Errorf("handoff.loop in %d runs, want the 2 runs of audit-handoff-loop", r.Runs)
			}
		}
		// the example's own audit has the rule for that agent, at those nodes
		ex := r.Examples[0]
		var a struct {
			Findings []struct {
				Rule, Agent string
				Nodes       []string
			}
		}
		text := commandText(t, f, out, "audit", ex.Run, "--format", "json")
		if err := json.Unmarshal([]byte(text), &a); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, fd := range a.Findings {
			if fd.Rule == r.Rule && fd.Agent == r.Agent && strings.Contains(strings.Join(ex.Nodes, ","), strings.Join(fd.Nodes, ",")) {
				found = true
			}
		}
		if !found {
			t.Errorf("row %s/%s: example run %s's audit has no such finding at %v", r.Rule, r.Agent, ex.Run, ex.Nodes)
		}
	}
	if !loop {
		t.Errorf("no handoff.loop row: %+v", doc.Rules)
	}
	if _, code := fleetOf(t, f, out, "--fail-on-rate", "handoff.loop=50"); code != ExitFindings {
		t.Errorf("--fail-on-rate handoff.loop=50 with 2 of 4 runs: exit %d, want %d", code, ExitFindings)
	}
	if !strings.Contains(errOut.String(), "handoff.loop in 50.0% of 4 runs") {
		t.Errorf("the gate's reason is not said:\n%s", errOut)
	}
	if _, code := fleetOf(t, f, out, "--fail-on-rate", "handoff.loop=51"); code != ExitOK {
		t.Errorf("--fail-on-rate handoff.loop=51: exit %d, want 0", code)
	}
	if code := run(t.Context(), f, []string{"fleet", "--fail-on-rate", "no.such=5", "--db", f.DBPath}); code != ExitUsage {
		t.Errorf("unknown rule: exit %d", code)
	}
	// the filters narrow the runs
	if doc, _ := fleetOf(t, f, out, "--agent", "refunds", "--limit", "1"); doc.Runs != 1 {
		t.Errorf("--limit 1: %d runs", doc.Runs)
	}
	if doc, _ := fleetOf(t, f, out, "--source", "otlp"); doc.Runs != 0 || len(doc.Rules) != 0 {
		t.Errorf("--source otlp: %+v", doc)
	}
	// text and markdown say the same rows
	for _, format := range []string{"text", "markdown"} {
		text := commandText(t, f, out, "fleet", "--format", format)
		for _, r := range doc.Rules {
			if !strings.Contains(text, r.Rule) {
				t.Errorf("%s lacks %s:\n%s", format, r.Rule, text)
			}
		}
	}
}

// The fleet page of inspect serve is inspect fleet: its JSON, for the
// same filters, is the command's to the byte (both audit through
// analysis.Analyzer.Fleet, and the page's filters are the flags).
func TestFleet_PageIsTheCommand(t *testing.T) {
	f, out, errOut := testFactory(t)
	recordFixtures(t, f, "audit-handoff-loop", "audit-fork-uneven", "handoff-chain")
	since := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	until := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	db, err := store.OpenReadOnly(t.Context(), f.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(web.New(storesrc.New(db), web.Options{}))
	defer srv.Close()
	for _, c := range []struct {
		flags []string
		query url.Values
	}{
		{nil, url.Values{}},
		{[]string{"--since", since, "--until", until, "--examples", "1"}, url.Values{"since": {since}, "until": {until}, "examples": {"1"}}},
		{[]string{"--agent", "intake", "--status", "ok"}, url.Values{"agent": {"intake"}, "status": {"ok"}}},
		{[]string{"--limit", "2", "--source", "inspect"}, url.Values{"limit": {"2"}, "source": {"inspect"}}},
	} {
		out.Reset()
		if code := run(t.Context(), f, append(append([]string{"fleet", "--format", "json"}, c.flags...), "--db", f.DBPath)); code != ExitOK {
			t.Fatalf("fleet %v: exit %d: %s", c.flags, code, errOut)
		}
		c.query.Set("format", "json")
		resp, err := http.Get(srv.URL + "/fleet?" + c.query.Encode())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(page) != out.String() {
			t.Errorf("fleet %v: the page (%s) says:\n%s\nthe command:\n%s", c.flags, resp.Status, page, out)
		}
	}
}
