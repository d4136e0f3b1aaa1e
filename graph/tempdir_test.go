package graph_test

import "os"

// filepathTemp makes a folder for benchmark data that outlives one
// benchmark function (b.TempDir is removed after each).
func filepathTemp() (string, error) { return os.MkdirTemp("", "inspect-graph-bench-") }
