package analysis

import (
	"context"

	"github.com/inspect-dev/inspect/findings"
)

// AuditConfig is the findings.Config run.Audit runs (the tests read the
// cache analysis and the profile it hands the rules).
func AuditConfig(r *Run) *findings.Config { return r.auditConfig(context.Background(), nil) }
