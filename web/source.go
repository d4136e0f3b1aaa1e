package web

import "github.com/inspect-dev/inspect/analysis"

// Source is what the pages read runs through: package analysis' Source
// (storesrc.New adapts a read-only *store.DB to it; tests may give any
// implementation). The pages read it only through an analysis.Analyzer.
type Source = analysis.Source

// ErrNotFound is what a Source wraps for a run or node it does not have;
// the pages answer 404.
var ErrNotFound = analysis.ErrNotFound

// RunSummary is one row of the runs page.
type RunSummary = analysis.RunSummary

// Ask is one question put to a recorded model call (`inspect ask`).
type Ask = analysis.Ask
