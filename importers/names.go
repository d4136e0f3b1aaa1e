package importers

import "strconv"

// BranchNames hands out the names of one fork's branches, unique among
// them: a name given before comes back as name-2, name-3, … (the first of
// those not given yet). Every importer names its branches through one, and
// Write again for the path elements, so siblings never share a path.
type BranchNames map[string]bool

// Unique returns name, or its first free numbered form, and takes it.
func (n BranchNames) Unique(name string) string {
	cand := name
	for k := 2; n[cand]; k++ {
		cand = name + "-" + strconv.Itoa(k)
	}
	n[cand] = true
	return cand
}
