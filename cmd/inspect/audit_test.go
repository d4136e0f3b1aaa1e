package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/inspect-dev/inspect/findings/report"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/runtime/runtimetest"

	"github.com/inspect-dev/inspect/findings"
)

// auditTestFactory returns a factory on buffers (no TTY) whose database
// holds the recorded run of fixture name (run id "run-<name>").
func auditTestFactory(t *testing.T, fixture string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	f, out, errOut := testFactory(t)
	if fixture == "" {
		return f, out, errOut
	}
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtimetest.RecordFixture(ctx, db, filepath.Join("..", "..", "fixtures", fixture), t.TempDir(), "run-"+fixture,
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return f, out, errOut
}

func TestNewCmdAudit(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want AuditOptions
	}{
		{"defaults", nil, AuditOptions{Run: "latest", Format: "text"}},
		{"run and format", []string{"7f3a", "--format", "sarif"}, AuditOptions{Run: "7f3a", Format: "sarif"}},
		{"fail-on", []string{"--fail-on", "error"}, AuditOptions{Run: "latest", Format: "text", FailOn: "error"}},
		{"rules", []string{"--rules"}, AuditOptions{Run: "latest", Format: "text", Rules: true}},
		{"explain", []string{"--explain", "fork.uneven"}, AuditOptions{Run: "latest", Format: "text", Explain: "fork.uneven"}},
		{"set", []string{"--set", "uneven-ratio=3", "--set", "uneven-min-gap=10s"}, AuditOptions{Run: "latest", Format: "text", Set: []string{"uneven-ratio=3", "uneven-min-gap=10s"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _, _ := auditTestFactory(t, "")
			var got *AuditOptions
			cmd := NewCmdAudit(f, func(o *AuditOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(new(bytes.Buffer))
			if err := cmd.Execute(); err != nil {
				t.Fatalf("Execute: %v", err)
			}
			got.F = nil
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func TestAuditRun(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // substring of stderr
	}{
		{"text", "audit-fanout-missed", []string{"audit"}, ExitOK,
			[]string{"fanout.missed: missed fan-out", "cost:  2.5s", "fix:   agents/analyst.md:2", "next:  one fork from analyst", "fanout.missed: found", "fork.uneven: not applicable (no fork in this run)", "grades: Forking C"}, ""},
		{"fail-on warning", "audit-fanout-missed", []string{"audit", "--fail-on", "warning"}, ExitFindings, []string{"fanout.missed"}, "at or above warning"},
		{"fail-on error passes warnings", "audit-fanout-missed", []string{"audit", "--fail-on", "error"}, ExitOK, []string{"fanout.missed"}, ""},
		{"fail-on error", "audit-handoff-loop", []string{"audit", "latest", "--fail-on", "error"}, ExitFindings, []string{"handoff.loop"}, "1 finding(s) at or above error"},
		{"clean run", "nearmiss-even-fanout", []string{"audit", "--fail-on", "warning"}, ExitOK, []string{"No topology mistakes found.", "fork.uneven: clear (1 fork with 2 or more branches examined)"}, ""},
		{"markdown", "audit-fork-uneven", []string{"audit", "--format", "markdown"}, ExitOK, []string{"# inspect audit", "`fork.uneven`", "**Next run should show:**"}, ""},
		{"junit", "audit-fork-uneven", []string{"audit", "--format", "junit"}, ExitOK, []string{"<testsuites", `<testcase name="fork.uneven"`, "<failure"}, ""},
		{"sarif", "audit-fork-uneven", []string{"audit", "--format", "sarif"}, ExitOK, []string{`"version": "2.1.0"`, `"ruleId": "fork.uneven"`, `"uri": "agents/analyst.md"`}, ""},
		{"bad format", "", []string{"audit", "--format", "yaml"}, ExitUsage, nil, "use one of: text, markdown, json, sarif, junit"},
		{"bad fail-on", "", []string{"audit", "--fail-on", "info"}, ExitUsage, nil, "use warning or error"},
		{"bad threshold", "", []string{"audit", "--set", "nope=1"}, ExitUsage, nil, "unknown threshold \"nope\""},
		{"unknown rule", "", []string{"audit", "--explain", "fork.nope"}, ExitUsage, nil, "no rule \"fork.nope\"; the rules are: fanout.missed"},
		{"explain", "", []string{"audit", "--explain", "fanout.missed"}, ExitOK, []string{"fanout.missed: missed fan-out", "Price: elapsed time", "Next run should show:"}, ""},
		{"explain shows thresholds in force", "", []string{"audit", "--explain", "fork.uneven", "--set", "uneven-ratio=3"}, ExitOK,
			[]string{"at least 3× the median of its siblings and at least 5s longer", "uneven-ratio = 3 (--set; default 2): slowest branch", "uneven-min-gap = 5s (default): how much longer"}, ""},
		{"explain refuses a bad threshold", "", []string{"audit", "--explain", "fork.uneven", "--set", "uneven-ratio=0.5"}, ExitUsage, nil, "uneven-ratio must be at least 1, got 0.5"},
		{"rules", "", []string{"audit", "--rules"}, ExitOK, []string{"delegation.missed-specialist", "handoff.loop"}, ""},
		{"rules show thresholds in force", "", []string{"audit", "--rules", "--set", "fanout-min-calls=5"}, ExitOK, []string{"at least 5 research calls or one-branch forks in one conversation"}, ""},
		{"rules with a run", "", []string{"audit", "--rules", "fork.uneven"}, ExitUsage, nil, "audit no run; drop \"fork.uneven\""},
		{"no runs", "", []string{"audit"}, ExitUsage, nil, "no runs recorded yet"},
		{"unknown run", "audit-fork-uneven", []string{"audit", "zzz"}, ExitUsage, nil, "no run matches \"zzz\""},
		{"threshold raises the bar", "audit-fork-uneven", []string{"audit", "--set", "uneven-ratio=7", "--fail-on", "warning"}, ExitOK, []string{"fork.uneven: clear"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, out, errOut := auditTestFactory(t, tt.fixture)
			code := run(context.Background(), f, tt.args)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, errOut)
			}
		})
	}
}

// TestAuditRun_JSON checks the documented JSON fields scripts rely on.
func TestAuditRun_JSON(t *testing.T) {
	f, out, _ := auditTestFactory(t, "audit-fork-overlap")
	if code := run(context.Background(), f, []string{"audit", "--format", "json"}); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	var doc struct {
		Run      string            `json:"run"`
		Grades   map[string]string `json:"grades"`
		Findings []struct {
			Rule  string         `json:"rule"`
			Agent string         `json:"agent"`
			Nodes []string       `json:"nodes"`
			Price map[string]any `json:"price"`
			Fix   struct {
				Location struct {
					Path string `json:"path"`
					Line int    `json:"line"`
				} `json:"location"`
			} `json:"fix"`
			Next        string `json:"next"`
			Fingerprint string `json:"fingerprint"`
		} `json:"findings"`
		Checks []findings.Check `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Run != "run-audit-fork-overlap" || doc.Grades["Forking"] == "" || doc.Grades["Hand-offs"] != "n/a" {
		t.Errorf("run/grades = %q %v", doc.Run, doc.Grades)
	}
	if len(doc.Findings) != 1 {
		t.Fatalf("%d findings, want 1", len(doc.Findings))
	}
	fd := doc.Findings[0]
	if fd.Rule != "fork.overlap" || fd.Agent != "analyst" || len(fd.Nodes) == 0 || !strings.HasPrefix(fd.Nodes[0], "n") ||
		fd.Price["elapsed_ms"] == nil || fd.Fix.Location.Path != "agents/analyst.md" || fd.Next == "" || fd.Fingerprint == "" {
		t.Errorf("finding = %+v", fd)
	}
	if len(doc.Checks) != len(rules.All) {
		t.Errorf("%d checks, want %d", len(doc.Checks), len(rules.All))
	}
}

// TestAuditRun_Styled renders with glamour when stdout is a terminal.
func TestAuditRun_Styled(t *testing.T) {
	f, out, _ := auditTestFactory(t, "audit-fork-uneven")
	f.IO.OutTTY, f.IO.NoColor = true, false
	f.Getenv = func(k string) string {
		if k == "GLAMOUR_STYLE" {
			return "dark"
		}
		return ""
	}
	if code := run(context.Background(), f, []string{"audit"}); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(out.String(), "\x1b[") || !strings.Contains(out.String(), "fork.uneven") || strings.Contains(out.String(), "**What happened:**") {
		t.Errorf("styled output lacks ANSI styling or the finding:\n%q", out.String())
	}
}

// The help speaks to users, who have no design document to look up.
func TestAuditHelp_NoDesignReference(t *testing.T) {
	f, _, _ := testFactory(t)
	if long := NewCmdAudit(f, nil).Long; strings.Contains(long, "DESIGN") {
		t.Errorf("inspect audit --help refers to the design document:\n%s", long)
	}
}

// With NO_COLOR on a terminal the report has no colour but is still wrapped
// to the terminal's width (issue 12, item 14: it came out as unwrapped
// plain text).
func TestAuditRun_NoColorTerminal(t *testing.T) {
	f, out, _ := auditTestFactory(t, "audit-fork-uneven")
	f.IO.OutTTY, f.IO.NoColor, f.IO.Width = true, true, 60
	if code := run(context.Background(), f, []string{"audit"}); code != ExitOK {
		t.Fatalf("exit code %d", code)
	}
	if strings.Contains(out.String(), "\x1b") || !strings.Contains(out.String(), "fork.uneven") {
		t.Errorf("NO_COLOR output has escape codes or lacks the finding:\n%q", out.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if w := utf8.RuneCountInString(strings.TrimRight(l, " ")); w > 60 {
			t.Errorf("a line of %d characters on a 60-column terminal: %q", w, l)
		}
	}
}

// --explain ID --format json prints the rule's documentation as JSON, with
// the thresholds in force (--set), and --rules --format json every rule's
// (issue 12, item 14: --explain printed text whatever --format said).
func TestAuditRun_ExplainJSON(t *testing.T) {
	f, out, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"audit", "--explain", "fork.uneven", "--format", "json", "--set", "uneven-ratio=3"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc report.RuleJSON
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("--explain --format json is not JSON: %v\n%s", err, out)
	}
	if doc.ID != "fork.uneven" || !strings.Contains(doc.Detects, "at least 3× the median") || len(doc.Thresholds) != 2 || doc.Thresholds[0] != (report.ThresholdJSON{Name: "uneven-ratio", Value: "3", Default: "2", Source: "--set", Doc: doc.Thresholds[0].Doc}) ||
		doc.Thresholds[1].Source != "default" {
		t.Errorf("explain JSON = %+v", doc)
	}
	out.Reset()
	if code := run(context.Background(), f, []string{"audit", "--rules", "--format", "json"}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var all []report.RuleJSON
	if err := json.Unmarshal(out.Bytes(), &all); err != nil || len(all) != len(rules.All) {
		t.Errorf("--rules --format json: %d rules (%v), want %d", len(all), err, len(rules.All))
	}
}

// SARIF of a project in a repository subfolder points at the project's own
// files: every result's URI, resolved against originalUriBaseIds, names a
// file that exists, whether the root is --sarif-root or the current folder
// (issue 12, item 4: URIs were relative to the project folder with no
// uriBaseId, so code scanning looked for agents.yaml at the repository root).
func TestAuditRun_SARIFSubfolder(t *testing.T) {
	repo := t.TempDir()
	f, out, errOut := testFactory(t)
	db, err := f.Store(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runtimetest.RecordFixture(context.Background(), db, filepath.Join("..", "..", "fixtures", "audit-fork-uneven"),
		filepath.Join(repo, "services", "my agents"), "run-sub", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	check := func(name string, args ...string) {
		t.Helper()
		out.Reset()
		if code := run(context.Background(), f, append([]string{"audit", "--format", "sarif"}, args...)); code != ExitOK {
			t.Fatalf("%s: exit %d: %s", name, code, errOut)
		}
		var log struct {
			Runs []struct {
				Bases   map[string]struct{ URI string } `json:"originalUriBaseIds"`
				Results []struct {
					Locations []struct {
						Physical struct {
							Artifact struct {
								URI  string `json:"uri"`
								Base string `json:"uriBaseId"`
							} `json:"artifactLocation"`
						} `json:"physicalLocation"`
					} `json:"locations"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(out.Bytes(), &log); err != nil || len(log.Runs) != 1 || len(log.Runs[0].Results) == 0 {
			t.Fatalf("%s: SARIF %v, %d runs:\n%s", name, err, len(log.Runs), out)
		}
		r := log.Runs[0]
		for _, res := range r.Results {
			for _, l := range res.Locations {
				a := l.Physical.Artifact
				if a.Base != report.SARIFRootBase || !strings.HasPrefix(a.URI, "services/my%20agents/audit-fork-uneven/") {
					t.Errorf("%s: artifact %+v, want uriBaseId %s and the path from the repository root", name, a, report.SARIFRootBase)
					continue
				}
				base, err := url.Parse(r.Bases[a.Base].URI)
				if err != nil || base.Scheme != "file" {
					t.Fatalf("%s: base %s = %q, want a file URI", name, a.Base, r.Bases[a.Base].URI)
				}
				ref, _ := url.Parse(a.URI)
				file := base.ResolveReference(ref).Path
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: %s resolves to %s, which does not exist", name, a.URI, file)
				}
			}
		}
	}
	check("--sarif-root", "--sarif-root", repo)
	t.Chdir(repo)
	check("the current folder")

	// a root that does not hold the project is refused, not written wrong
	out.Reset()
	if code := run(context.Background(), f, []string{"audit", "--format", "sarif", "--sarif-root", t.TempDir()}); code != ExitUsage || !strings.Contains(errOut.String(), "is not inside --sarif-root") {
		t.Errorf("a root elsewhere: exit %d, stderr %q; want 2", code, errOut)
	}
}
