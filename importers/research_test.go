package importers

import "testing"

func TestIsResearch(t *testing.T) {
	for _, c := range []struct {
		tool string
		want bool
	}{
		{"ReadFile", true}, {"read_file", true}, {"getWeather", true}, {"list_dir", true},
		{"SearchWeb", true}, {"FetchURL", true}, {"lookup_invoice", true}, {"QueryDB", true},
		{"find_files", true}, {"WriteFile", false}, {"Shell", false}, {"", false}, {"spreadsheet", false},
	} {
		if got := (Options{}).IsResearch(c.tool); got != c.want {
			t.Errorf("IsResearch(%q) = %v, want %v", c.tool, got, c.want)
		}
	}
	only := Options{Research: func(tool string) bool { return tool == "Shell" }}
	if !only.IsResearch("Shell") || only.IsResearch("ReadFile") {
		t.Error("a configured Research func must replace the default patterns")
	}
	if !MatchResearch([]string{"Exact"}, "exact") || MatchResearch([]string{"Exact"}, "exactly") {
		t.Error("a pattern without * matches only that name, case-insensitively")
	}
}
