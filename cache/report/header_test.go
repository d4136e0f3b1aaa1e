package report_test

import (
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
)

// TestHeader_NotAnalysed: the graph's cache header says "not analysed"
// when no call could be analysed (an import without stored requests), as
// inspect cache does, not "predicted reusable 0%".
func TestHeader_NotAnalysed(t *testing.T) {
	none := report.Header(&cache.Report{Total: cache.Totals{Calls: 3, In: 9000}})
	if !strings.Contains(none, "predicted reusable not analysed") || strings.Contains(none, "reusable 0%") {
		t.Errorf("no call analysed: %q", none)
	}
	some := report.Header(&cache.Report{Total: cache.Totals{Calls: 3, Analyzed: 2, In: 1000, Predicted: 250}})
	if !strings.Contains(some, "predicted reusable 25% of input") {
		t.Errorf("two calls analysed: %q", some)
	}
}
