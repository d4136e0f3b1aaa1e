package importerstest

import (
	"os"
	"path/filepath"
	"testing"
)

// Transcripts returns the real sample sessions' folder, shared/transcripts
// (copied there with their SOURCE.txt; the project keeps fetched data
// outside the repository), by walking up
// from the package directory (the repository's parent holds shared/ in CI
// and in the team's checkout). When it is absent the test is skipped, or
// fails when INSPECT_REQUIRE_TRANSCRIPTS is set.
func Transcripts(t testing.TB) string {
	t.Helper()
	if p := Find(); p != "" {
		return p
	}
	why := "the real sample sessions were not found: no shared/transcripts above the repository"
	if os.Getenv("INSPECT_REQUIRE_TRANSCRIPTS") != "" {
		t.Fatalf("%s (INSPECT_REQUIRE_TRANSCRIPTS is set)", why)
	}
	t.Skip(why)
	return ""
}

// Sample returns the path of one sample under shared/transcripts
// (slash-separated, e.g. "kimi-cli/with-tool-calls").
func Sample(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Transcripts(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("sample %s: %v", rel, err)
	}
	return p
}

// Find returns the shared/transcripts folder above the working folder, or
// "" (fuzz targets seed from it when it is there).
func Find() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		p := filepath.Join(dir, "shared", "transcripts")
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}
