package styles

import (
	"embed"
	"io/fs"
	"sort"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

//go:embed *.xml
var embedded embed.FS

// Registry of Styles. The embedded styles are parsed on first use (Get,
// Names), not in package init (patched for inspect; see PATCHES.md): until
// then it holds only the styles passed to Register.
var Registry = map[string]*chroma.Style{}

// Fallback style. Reassign to change the default fallback style; it is set
// to "swapoff" when the embedded styles are parsed, unless reassigned.
var Fallback *chroma.Style

var loadOnce sync.Once

// load parses the embedded styles into Registry, keeping any registered
// under the same name.
func load() {
	loadOnce.Do(func() {
		files, err := fs.ReadDir(embedded, ".")
		if err != nil {
			panic(err)
		}
		for _, file := range files {
			if file.IsDir() {
				continue
			}
			r, err := embedded.Open(file.Name())
			if err != nil {
				panic(err)
			}
			style, err := chroma.NewXMLStyle(r)
			if err != nil {
				panic(err)
			}
			if _, ok := Registry[style.Name]; !ok {
				Registry[style.Name] = style
			}
			_ = r.Close()
		}
		if Fallback == nil {
			Fallback = Registry["swapoff"]
		}
	})
}

// Register a chroma.Style.
func Register(style *chroma.Style) *chroma.Style {
	Registry[style.Name] = style
	return style
}

// Names of all available styles.
func Names() []string {
	load()
	out := []string{}
	for name := range Registry {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// Get named style, or Fallback.
func Get(name string) *chroma.Style {
	if style, ok := Registry[name]; ok {
		return style
	}
	load()
	if style, ok := Registry[name]; ok {
		return style
	}
	return Fallback
}
