package importers

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/inspect-dev/inspect/record"
)

// Limits of the instruction files a project snapshot holds.
const (
	MaxInstructionFile  = 1 << 20 // bytes of one file; a larger one is left out
	MaxInstructionFiles = 64      // files of one snapshot
)

// InstructionDir is the folder the instruction files of a session are read
// from, given the working folder cwd the session names ("" when it names
// none): the project folder the user named (Options.Project), else cwd when
// it is the folder the import runs in (Options.Here: the user's own session
// of the folder they are in), else "" — none are read. A session's word for
// its working folder never makes an import read that folder by itself: a
// shared session naming another user's folder brings nothing of it.
func (o Options) InstructionDir(cwd string) string {
	if o.Project != "" {
		return o.Project
	}
	if cwd != "" && o.Here != "" && sameDir(cwd, o.Here) {
		return cwd
	}
	return ""
}

// Instructions fills in s's project snapshot: the instruction files rel
// names (ReadInstructions) in the session's project folder (InstructionDir
// of the working folder cwd the session names). s.Dir becomes the folder
// the fixes of an audit are located in: the project folder the user named,
// else cwd; the snapshot is named after it when the session gave no name.
func (o Options) Instructions(s *Session, cwd string, rel []string) {
	s.Dir = cwd
	if o.Project != "" {
		s.Dir = o.Project
	}
	if s.Project.Name == "" && s.Dir != "" {
		s.Project.Name = filepath.Base(s.Dir)
	}
	s.Project.Files = ReadInstructions(o.InstructionDir(cwd), rel)
}

// ReadInstructions snapshots the instruction files of project folder dir
// that rel names (slash paths relative to dir; one ending in "/*.md" takes
// every .md file of that folder, in name order). Every file is read
// through dir (OpenIn): a symlink leading out of it is not followed, a
// FIFO or device is not waited on; only regular files of at most
// MaxInstructionFile bytes are kept, MaxInstructionFiles at most, each once,
// sorted by path. Unreadable, missing, oversized or escaping files are left
// out; a dir of "" reads nothing.
func ReadInstructions(dir string, rel []string) []record.File {
	if dir == "" {
		return nil
	}
	var files []record.File
	seen := map[string]bool{}
	add := func(r string) {
		if seen[r] || len(files) >= MaxInstructionFiles || !cleanRel(r) {
			return
		}
		b, err := ReadSmallIn(dir, filepath.Join(dir, filepath.FromSlash(r)), MaxInstructionFile)
		if err != nil {
			return
		}
		seen[r] = true
		sum := sha256.Sum256(b)
		files = append(files, record.File{Path: r, SHA256: hex.EncodeToString(sum[:]), Content: string(b)})
	}
	for _, r := range rel {
		folder, ok := strings.CutSuffix(r, "/*.md")
		if !ok {
			add(r)
			continue
		}
		for _, name := range mdFiles(dir, folder) {
			add(folder + "/" + name)
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// mdFiles lists the names of the .md entries of folder (slash, relative to
// dir), read through dir, in name order.
func mdFiles(dir, folder string) []string {
	if !cleanRel(folder) {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(folder))
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	var out []string
	for _, n := range names {
		if strings.HasSuffix(n, ".md") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// cleanRel reports whether r is a slash path inside its folder: not
// absolute, no "..", no backslash (a name a source gave, such as a
// sub-agent type, cannot climb out).
func cleanRel(r string) bool {
	if r == "" || strings.Contains(r, `\`) || path.IsAbs(r) {
		return false
	}
	c := path.Clean(r)
	return c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// RelTo returns the slash path of p relative to folder dir when p is an
// absolute path inside it (an instruction file a session names by its
// absolute path), else "".
func RelTo(dir, p string) string {
	if dir == "" || !filepath.IsAbs(p) {
		return ""
	}
	r, ok := within(dir, filepath.Clean(p))
	if !ok {
		return ""
	}
	return filepath.ToSlash(r)
}

// sameDir reports whether a and b name one folder.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && fa.IsDir() && os.SameFile(fa, fb)
}
