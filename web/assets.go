package web

import (
	"embed"
	"fmt"
	"html/template"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/inspect-dev/inspect/diff"
	"github.com/inspect-dev/inspect/graph"
)

//go:embed assets/app.css assets/app.js
var assetFS embed.FS

//go:embed templates/*.tmpl
var templateFS embed.FS

// pageAssets are the stylesheet and script every page inlines, with the
// hashes the Content-Security-Policy allows them by.
type pageAssets struct {
	css, js         string
	cssHash, jsHash string
}

// assets reads and hashes the page assets on first use (not in package
// init: a command that serves no page does not pay for it).
var assets = sync.OnceValue(func() (a pageAssets) {
	css, err := assetFS.ReadFile("assets/app.css")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	js, err := assetFS.ReadFile("assets/app.js")
	if err != nil {
		panic(err)
	}
	a.css, a.js = string(css), string(js)
	a.cssHash, a.jsHash = hashOf(a.css), hashOf(a.js)
	return a
})

// page returns the templates of page name: the layout, the shared pieces,
// and the page's own "content".
func page(name string) (*template.Template, error) {
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	t := pages[name]
	if t == nil {
		return nil, fmt.Errorf("internal error: no page %q", name)
	}
	return t, nil
}

// parsePages parses the templates of every page once, on first use (not in
// package init: a command that serves no page does not pay for it), and
// returns that parse's result each time.
var parsePages = sync.OnceValues(func() (map[string]*template.Template, error) {
	funcs := template.FuncMap{
		"dur": graph.FormatDuration,
		// gradeClass is a grade's style class: g-A … g-F, g-na for an
		// area in which nothing was examined
		"gradeClass": gradeClass,
		// count is "N word" with word's plural unless N is 1: "1 fork", "2 forks"
		"count": func(n int, one, many string) template.HTML {
			return template.HTML("<b>" + thousands(int64(n)) + "</b> " + template.HTMLEscapeString(plural1(n, one, many)))
		},
		"num": func(v any) string {
			switch n := v.(type) {
			case int:
				return thousands(int64(n))
			case int64:
				return thousands(n)
			case float64:
				return thousands(int64(n + 0.5))
			}
			return fmt.Sprint(v)
		},
		"metric": func(m diff.Metric, v int64) string {
			if m == diff.MetricElapsed {
				return graph.FormatDuration(time.Duration(v) * time.Millisecond)
			}
			return thousands(v)
		},
		"findingIn": func(f any, page any) any {
			var fv *findingView
			switch v := f.(type) {
			case *findingView:
				fv = v
			case findingView:
				fv = &v
			}
			return struct {
				F    *findingView
				Page any
			}{fv, page}
		},
		// nodeIn is another node's id with the node page that names it
		"nodeIn": func(node any, p *nodePage) any {
			return struct {
				Node string
				Page *nodePage
			}{fmt.Sprint(node), p}
		},
		"pair": func(title string, list []diff.FindingChange) any {
			return struct {
				Title string
				List  []diff.FindingChange
			}{title, list}
		},
		"utc":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"join":   strings.Join,
		"status": statusClass,
		"f":      func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
		"add":    func(a, b int) int { return a + b },
		"pct": func(part, whole int64) string {
			if whole <= 0 {
				return "–"
			}
			return fmt.Sprintf("%.0f%%", 100*float64(part)/float64(whole))
		},
	}
	base, err := template.New("layout").Funcs(funcs).ParseFS(templateFS, "templates/layout.tmpl", "templates/svg.tmpl", "templates/parts.tmpl")
	if err != nil {
		return nil, fmt.Errorf("internal error: web templates: %w", err)
	}
	out := map[string]*template.Template{}
	for _, name := range []string{"runs", "run", "node", "diff", "error", "findings", "fleet"} {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(templateFS, "templates/"+name+".tmpl")
		}
		if err != nil {
			return nil, fmt.Errorf("internal error: web template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
})

// render writes page name with data (a *…Page whose pageData it fills
// with the assets).
func (s *Server) render(w io.Writer, name string, data any) error {
	return renderPage(w, name, data)
}

func renderPage(w io.Writer, name string, data any) error {
	t, err := page(name)
	if err != nil {
		return err
	}
	if p, ok := data.(interface{ base() *pageData }); ok {
		b := p.base()
		a := assets()
		b.CSS, b.JS = template.CSS(a.css), template.JS(a.js)
		b.CSP = policy(b.Report)
	}
	return t.ExecuteTemplate(w, "layout", data)
}

// pageData is what the layout reads.
type pageData struct {
	Title string
	Page  string // runs, run, node, diff, error
	// Report is set on the self-contained file: no links to other pages,
	// no fetches, the policy in a meta element.
	Report bool
	// Live is set on a page that polls for news (a run still recording).
	Live bool
	Poll int64 // ms between polls
	CSS  template.CSS
	JS   template.JS
	CSP  string
}

func (p *pageData) base() *pageData { return p }

// english formats numbers with thousands separators (12,146).
var english = message.NewPrinter(language.English)

// thousands writes n with separators: 12,146.
func thousands(n int64) string { return english.Sprintf("%d", n) }

// pctf is a share as a whole percentage: 0.94 → "94%".
func pctf(f float64) string { return english.Sprintf("%.0f%%", f*100) }

// statusClass is the CSS class of a status badge.
func statusClass(s any) string {
	switch fmt.Sprint(s) {
	case "ok":
		return "st-ok"
	case "running":
		return "st-running"
	case "error", "exhausted":
		return "st-error"
	default:
		return "st-stopped"
	}
}

// plural1 is one for n == 1, else many.
func plural1(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
