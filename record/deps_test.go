package record_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const mod = "github.com/inspect-dev/inspect"

// Sets of packages a rule names. A name is a package of ours relative to
// the module ("cache/report"), "x/..." for x and every package under it, or
// an outside import path ending in "/" for every package under it.
var (
	// sql is the database: database/sql and any SQLite driver (matched by
	// name, as a driver may come from anywhere).
	sql = []string{"database/sql", "sqlite"}
	// rendering is what draws or prints a run.
	rendering = []string{"mermaid/...", "chart", "graphjson", "timeline", "web/...", "cache/report", "findings/report", "diff", "github.com/charmbracelet/"}
	// rules are the audit's rules and what runs them.
	rules = []string{"findings/...", "analysis/..."}
	// terminals are the libraries that style or probe a terminal.
	terminals = []string{"github.com/charmbracelet/", "github.com/muesli/", "golang.org/x/term", "github.com/mattn/go-isatty"}
)

func join(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s...)
	}
	return out
}

// layer is one row of DESIGN §2's table (the "knows nothing of" column),
// or one of the bars beside it: the packages it covers must not import
// (directly: the package knows of it) or link (anywhere in its
// dependencies) what it names.
type layer struct {
	pkgs    []string // the packages covered
	imports []string // what they may not import
	links   []string // what they may not link
	// only, when set, is every package of ours they may import;
	// linksOnly every package of ours they may link.
	only, linksOnly []string
	why             string
}

var layers = []layer{
	{pkgs: []string{"record"}, only: []string{}, linksOnly: []string{}, links: sql,
		why: "record is the vocabulary every package speaks: it imports nothing of ours, no SQL"},
	{pkgs: []string{"runtime/..."}, imports: join(rendering, rules),
		why: "runtime knows nothing of rendering or rules"},
	{pkgs: []string{"store/..."}, only: []string{"record", "store/...", "internal/..."},
		why: "store persists records and knows no agent semantics beyond what it stores: it imports nothing above it"},
	{pkgs: []string{"store/layout"}, linksOnly: []string{"record"}, links: sql,
		why: "store/layout, the request layout cache reads, names records and nothing else of ours, and links no SQL"},
	{pkgs: []string{"chat"}, imports: rules, links: sql,
		why: "chat reads wire formats and knows nothing of SQL or rules"},
	{pkgs: []string{"importers/..."}, imports: join(rendering, rules, sql),
		why: "an importer turns files into records and knows nothing of rendering, rules or SQL (it writes through the store's API)"},
	{pkgs: []string{"otel"}, imports: join(rules, rendering),
		why: "otel knows nothing of rules or rendering"},
	{pkgs: []string{"graph/..."}, imports: rendering, links: sql,
		why: "graph knows nothing of SQL or rendering"},
	{pkgs: []string{"mermaid/..."}, imports: rules, links: sql,
		why: "mermaid knows nothing of SQL or rules"},
	{pkgs: []string{"findings/..."}, imports: terminals, links: sql,
		why: "findings knows nothing of SQL or terminals"},
	{pkgs: []string{"cache", "cache/prefix"}, imports: rendering, links: sql,
		why: "cache knows nothing of SQL or rendering (cache/report renders it)"},
	{pkgs: []string{"cache/report"}, links: sql,
		why: "cache/report renders what cache gives it and links no SQL"},
	{pkgs: []string{"ask/..."}, imports: []string{"runtime/..."}, links: sql,
		why: "ask knows nothing of the agent loop or SQL"},
	{pkgs: []string{"web/..."}, imports: []string{"findings/rules"}, links: sql,
		why: "web knows nothing of SQL or rules: it renders what graph, findings and cache give it"},
	{pkgs: []string{"diff", "timeline", "analysis", "chart", "graphjson", "money", "snapshot", "config", "stack", "mcpserver", "fleet"}, links: sql,
		why: "the layers above the store read records, never SQL"},
	{pkgs: []string{"stack"}, linksOnly: []string{"record"},
		why: "the stacks' terms are vocabulary: stack names records and nothing else of ours"},
	{pkgs: []string{"internal/agentsyaml"}, only: []string{},
		why: "the one walk of agents.yaml imports nothing of ours, so snapshot (below the graph) and runtime/project share it without snapshot importing runtime"},
	{pkgs: []string{"internal/llmhttp/..."}, imports: []string{"runtime/...", "ask/..."}, links: sql,
		why: "the one provider HTTP client lies below both of its users, runtime and ask, and links no SQL"},
	{pkgs: []string{"timeline"}, links: []string{"cache/...", "money", "chat"},
		why: "timeline lays a run out on its clock; labels come to it through a function, so it links no cache, money or chat"},
}

// match reports whether path (a full import path) is one of names.
func match(path string, names []string) bool {
	for _, n := range names {
		switch {
		case n == "sqlite":
			if strings.Contains(path, "sqlite") {
				return true
			}
		case strings.HasSuffix(n, "/") && strings.Contains(n, "."):
			if strings.HasPrefix(path, n) || path == strings.TrimSuffix(n, "/") {
				return true
			}
		case strings.Contains(strings.SplitN(n, "/", 2)[0], ".") || n == "database/sql":
			if path == n {
				return true
			}
		case strings.HasSuffix(n, "/..."):
			base := mod + "/" + strings.TrimSuffix(n, "/...")
			if path == base || strings.HasPrefix(path, base+"/") {
				return true
			}
		default:
			if path == mod+"/"+n {
				return true
			}
		}
	}
	return false
}

func ours(path string) bool { return path == mod || strings.HasPrefix(path, mod+"/") }

// testSupport reports whether pkg only helps tests (asktest, graphtest,
// runtimetest…): it may join layers that its tests join.
func testSupport(pkg string) bool {
	last := pkg[strings.LastIndex(pkg, "/")+1:]
	return strings.HasSuffix(last, "test") && last != "test"
}

// pkgInfo is one package as go list sees it.
type pkgInfo struct {
	imports, deps []string
}

func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{join .Imports \" \"}}\t{{join .Deps \" \"}}", mod+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	pkgs := map[string]pkgInfo{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		pkgs[f[0]] = pkgInfo{imports: strings.Fields(f[1]), deps: strings.Fields(f[2])}
	}
	return pkgs
}

// check returns every way pkgs break the layers, one line each.
func check(pkgs map[string]pkgInfo) []string {
	var bad []string
	for _, l := range layers {
		covered := 0
		for pkg, info := range pkgs {
			if !match(pkg, l.pkgs) || testSupport(pkg) {
				continue
			}
			covered++
			rel := strings.TrimPrefix(pkg, mod+"/")
			for _, imp := range info.imports {
				switch {
				case imp == pkg:
				case match(imp, l.imports):
					bad = append(bad, rel+" imports "+imp+": "+l.why)
				case l.only != nil && ours(imp) && !match(imp, l.only):
					bad = append(bad, rel+" imports "+imp+": "+l.why)
				}
			}
			for _, dep := range info.deps {
				if match(dep, l.links) || l.linksOnly != nil && ours(dep) && dep != pkg && !match(dep, l.linksOnly) {
					bad = append(bad, rel+" links "+dep+": "+l.why)
				}
			}
		}
		if covered == 0 {
			bad = append(bad, "no package matches "+strings.Join(l.pkgs, ", ")+": the rule \""+l.why+"\" checks nothing")
		}
	}
	sort.Strings(bad)
	return bad
}

// TestImportGraph checks DESIGN §2's table: what each package knows
// nothing of (it does not import it) and what the layers above the store
// never link (database/sql, a SQLite driver).
func TestImportGraph(t *testing.T) {
	for _, b := range check(listPackages(t)) {
		t.Error(b)
	}
}

// The check itself: each kind of breach is caught, and a clean graph passes.
func TestImportGraph_Check(t *testing.T) {
	p := func(s string) string { return mod + "/" + s }
	base := map[string]pkgInfo{}
	for _, l := range layers {
		for _, n := range l.pkgs {
			base[p(strings.TrimSuffix(n, "/..."))] = pkgInfo{}
		}
	}
	if bad := check(base); len(bad) != 0 {
		t.Fatalf("a graph with no imports breaks the layers: %q", bad)
	}
	tests := []struct {
		name, pkg string
		info      pkgInfo
		want      string
	}{
		{"record imports ours", "record", pkgInfo{imports: []string{p("graph")}}, "record imports " + p("graph")},
		{"record links ours", "record", pkgInfo{deps: []string{p("internal/termsafe")}}, "record links " + p("internal/termsafe")},
		{"store/layout links the store", "store/layout", pkgInfo{deps: []string{p("store")}}, "store/layout links " + p("store")},
		{"stack links graph", "stack", pkgInfo{deps: []string{p("record"), p("graph")}}, "stack links " + p("graph")},
		{"graph links SQL", "graph", pkgInfo{deps: []string{"database/sql"}}, "graph links database/sql"},
		{"a findings subpackage links a driver", "findings/rules", pkgInfo{deps: []string{"github.com/mattn/go-sqlite3"}}, "findings/rules links github.com/mattn/go-sqlite3"},
		{"runtime renders", "runtime/tools", pkgInfo{imports: []string{p("mermaid/render")}}, "runtime/tools imports " + p("mermaid/render")},
		{"store knows the graph", "store", pkgInfo{imports: []string{p("graph")}}, "store imports " + p("graph")},
		{"an importer writes SQL", "importers/codex", pkgInfo{imports: []string{"database/sql"}}, "importers/codex imports database/sql"},
		{"findings styles a terminal", "findings/report", pkgInfo{imports: []string{"github.com/charmbracelet/glamour"}}, "findings/report imports github.com/charmbracelet/glamour"},
		{"timeline links cache", "timeline", pkgInfo{deps: []string{p("cache/report")}}, "timeline links " + p("cache/report")},
		{"timeline links money", "timeline", pkgInfo{deps: []string{p("money")}}, "timeline links " + p("money")},
		{"web imports the rules", "web", pkgInfo{imports: []string{p("findings/rules")}}, "web imports " + p("findings/rules")},
		{"ask imports the loop", "ask", pkgInfo{imports: []string{p("runtime")}}, "ask imports " + p("runtime")},
		{"analysis links SQL", "analysis", pkgInfo{deps: []string{"database/sql"}}, "analysis links database/sql"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := map[string]pkgInfo{}
			for k, v := range base {
				g[k] = v
			}
			g[p(tt.pkg)] = tt.info
			bad := check(g)
			if len(bad) != 1 || !strings.HasPrefix(bad[0], tt.want+":") {
				t.Errorf("check = %q, want one breach %q", bad, tt.want)
			}
		})
	}
	// allowed: analysis/storesrc links the store; a test helper joins layers
	g := map[string]pkgInfo{}
	for k, v := range base {
		g[k] = v
	}
	g[p("analysis/storesrc")] = pkgInfo{imports: []string{p("store")}, deps: []string{"database/sql"}}
	g[p("graph/graphtest")] = pkgInfo{imports: []string{p("store")}, deps: []string{"database/sql"}}
	g[p("web")] = pkgInfo{imports: []string{p("findings"), p("analysis")}}
	if bad := check(g); len(bad) != 0 {
		t.Errorf("check = %q, want no breach for what the table allows", bad)
	}
}
