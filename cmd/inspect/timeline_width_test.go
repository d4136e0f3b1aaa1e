package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestTimeline_NarrowWidth: --width below the timeline's minimum is a usage
// error naming it (before: --width 5 drew a wider timeline with an empty
// critical-path line); a terminal narrower than that is drawn at the
// minimum, its critical path named.
func TestTimeline_NarrowWidth(t *testing.T) {
	f, _, errOut := testFactory(t)
	if code := run(context.Background(), f, []string{"demo"}); code != ExitOK {
		t.Fatalf("demo: exit %d: %s", code, errOut)
	}
	g, _, errOut := testFactory(t)
	g.DBPath = f.DBPath
	if code := run(context.Background(), g, []string{"timeline", "--width", "5"}); code != ExitUsage || !strings.Contains(errOut.String(), "--width 5: the timeline needs 40 to 1000 columns") {
		t.Errorf("--width 5: exit %d: %s", code, errOut)
	}
	h, out, errOut := testFactory(t)
	h.DBPath = f.DBPath
	h.IO.Width = 20
	if code := run(context.Background(), h, []string{"timeline"}); code != ExitOK {
		t.Fatalf("timeline on a 20-column terminal: exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^critical path \(\*\): trunk`).MatchString(out.String()) {
		t.Errorf("a 20-column terminal: the critical path is not named:\n%s", out)
	}
}
