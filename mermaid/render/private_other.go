//go:build !unix

package render

import "os"

// privateToMe cannot tell owners apart here (nor do permission bits say
// who may write): a folder in the user's own cache folder is taken as
// theirs.
func privateToMe(os.FileInfo) bool { return true }
