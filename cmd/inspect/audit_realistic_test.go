package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph/graphtest"
)

// realisticReport is `inspect audit --format json` of the realistic
// 10,000-node run (graphtest.RecordRealistic), its run id written RUN: the
// report of the build before the rules' speed-ups of issue 30, kept by
// hand. No flag rewrites it: a change that makes the rules cheaper changes
// no finding, check, price or word of the report.
const realisticReport = "testdata/audit-realistic-10k.json.gz"

// TestAuditRun_RealisticReportUnchanged audits the realistic run recorded
// in a fresh SQLite file as a user does and compares the whole JSON report
// byte for byte with realisticReport.
func TestAuditRun_RealisticReportUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("records a run of 10,000 nodes")
	}
	f, out, errOut := testFactory(t)
	ctx := context.Background()
	db, err := f.Store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id, err := graphtest.RecordRealistic(ctx, db, 10_000)
	if err != nil {
		t.Fatal(err)
	}
	if code := run(ctx, f, []string{"audit", "--format", "json", id}); code != ExitOK {
		t.Fatalf("exit code %d\n%s", code, errOut)
	}
	got := bytes.ReplaceAll(out.Bytes(), []byte(id), []byte("RUN"))
	gz, err := os.Open(realisticReport)
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	want, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
		line++
	}
	saved := filepath.Join(os.TempDir(), "audit-realistic-10k.got.json")
	if err := os.WriteFile(saved, got, 0o644); err != nil {
		t.Log(err)
	}
	t.Errorf("the report differs from %s at line %d (got %d lines, want %d; the whole report is in %s):\ngot:  %s\nwant: %s",
		realisticReport, line+1, len(gl), len(wl), saved, lineAt(gl, line), lineAt(wl, line))
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of report)"
}
