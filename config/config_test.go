package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
)

const full = `# the team's policy
thresholds:
  uneven-ratio: 3
  uneven-min-gap: 10s
rules:
  fork.uneven: off
  handoff.early: on
research: ["read*", "lookup_order"]
currency: eur
prices:
  gpt-4.1-mini: {input: 0.40, cached_input: 0.10, output: 1.60}
  claude-sonnet-4*:
    input: 3
    cache_write: 3.75
    output: 15
cache-lifetime: 1h
ignore:
  - rule: fork.uneven
    agent: researcher
    fingerprint: 0123456789abcdef
    reason: the APAC source is slow
    expires: 2026-06-30
  - rule: fanout.missed
    reason: serial on purpose
`

func TestParse_Full(t *testing.T) {
	c, err := Parse([]byte(full), ".inspect.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Thresholds) != 2 || c.Thresholds[0] != (Threshold{Name: "uneven-ratio", Value: "3", Line: 3}) || c.Thresholds[1].Line != 4 {
		t.Errorf("Thresholds = %+v", c.Thresholds)
	}
	if len(c.Rules) != 2 || c.Rules[0] != (RuleSwitch{Rule: "fork.uneven", Off: true, Line: 6}) || c.Rules[1].Off {
		t.Errorf("Rules = %+v", c.Rules)
	}
	if strings.Join(c.Research, ",") != "read*,lookup_order" || c.ResearchLine != 8 {
		t.Errorf("Research = %v at %d", c.Research, c.ResearchLine)
	}
	if c.Prices == nil || c.Prices.CurrencyCode() != "EUR" || len(c.Prices.Prices) != 2 {
		t.Fatalf("Prices = %+v", c.Prices)
	}
	mini, sonnet := c.Prices.Prices[0], c.Prices.Prices[1]
	if mini.Model != "gpt-4.1-mini" || mini.Rates.Input != 0.40 || mini.Rates.CachedInput != 0.10 || !mini.Rates.HasCachedInput ||
		mini.Rates.HasCacheWrite || mini.Rates.Output != 1.60 || mini.Source != ".inspect.yaml:11" {
		t.Errorf("gpt-4.1-mini = %+v", mini)
	}
	if sonnet.Model != "claude-sonnet-4*" || sonnet.Rates.HasCachedInput || sonnet.Rates.CacheWrite != 3.75 || sonnet.Source != ".inspect.yaml:12" {
		t.Errorf("claude-sonnet-4* = %+v", sonnet)
	}
	if d, src, ok := c.Lifetime(); !ok || d != time.Hour || src != ".inspect.yaml:16" {
		t.Errorf("Lifetime = %v %q %v", d, src, ok)
	}
	if len(c.Ignore) != 2 {
		t.Fatalf("Ignore = %+v", c.Ignore)
	}
	ig := c.Ignore[0]
	if ig.Rule != "fork.uneven" || ig.Agent != "researcher" || ig.Fingerprint != "0123456789abcdef" || ig.Reason != "the APAC source is slow" ||
		ig.ExpiresText != "2026-06-30" || !ig.Expires.Equal(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)) || ig.Source != ".inspect.yaml:18" {
		t.Errorf("ignore[0] = %+v", ig)
	}
	if c.Ignore[1].Source != ".inspect.yaml:23" || !c.Ignore[1].Expires.IsZero() {
		t.Errorf("ignore[1] = %+v", c.Ignore[1])
	}
}

// TestOptions_Precedence: the file's values carry FILE:LINE as their
// source, a flag given after them wins and says --set, and what nothing
// set stays the default.
func TestOptions_Precedence(t *testing.T) {
	c, err := Parse([]byte(full), "repo/.inspect.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o, err := c.Options()
	if err != nil {
		t.Fatal(err)
	}
	uneven := findings.LookupOption(rules.All, "uneven-ratio")
	gap := findings.LookupOption(rules.All, "uneven-min-gap")
	calls := findings.LookupOption(rules.All, "fanout-min-calls")
	if uneven.Value(o) != "3" || o.Source("uneven-ratio") != "repo/.inspect.yaml:3" {
		t.Errorf("uneven-ratio = %s from %s", uneven.Value(o), o.Source("uneven-ratio"))
	}
	if calls.Value(o) != "3" || o.Source("fanout-min-calls") != findings.SourceDefault {
		t.Errorf("fanout-min-calls = %s from %s, want the default", calls.Value(o), o.Source("fanout-min-calls"))
	}
	if src, off := o.Off("fork.uneven"); !off || src != "repo/.inspect.yaml:6" {
		t.Errorf("fork.uneven off = %v at %q", off, src)
	}
	if _, off := o.Off("handoff.early"); off {
		t.Error("handoff.early: on turned it off")
	}
	if err := o.Set("uneven-min-gap=2s"); err != nil {
		t.Fatal(err)
	}
	if gap.Value(o) != "2s" || o.Source("uneven-min-gap") != findings.SourceFlag {
		t.Errorf("after --set: uneven-min-gap = %s from %s, want 2s from --set", gap.Value(o), o.Source("uneven-min-gap"))
	}
	if (*Config)(nil).ResearchPatterns() != nil {
		t.Error("no config, yet research patterns")
	}
}

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // FILE:LINE: KEY: message fragments, in order
	}{
		{"not yaml", "thresholds: [1,\n", []string{`c.yaml:1: not valid YAML`}},
		{"not a mapping", "- a\n- b\n", []string{`c.yaml:1: the file must be a mapping`}},
		{"unknown key", "thresholds: {}\ncolour: red\n", []string{`c.yaml:2: colour: unknown key; the keys are thresholds,`}},
		{"twice", "currency: USD\nprices: {m: {input: 1, output: 1}}\ncurrency: EUR\n", []string{`c.yaml:3: currency: given twice (first at line 1)`}},
		{"unknown threshold", "thresholds:\n  uneven: 3\n", []string{`c.yaml:2: thresholds.uneven: unknown threshold "uneven"; known: fanout-min-calls`}},
		{"bad value", "thresholds:\n  uneven-min-gap: soon\n", []string{`c.yaml:2: thresholds.uneven-min-gap: uneven-min-gap wants a duration such as 5s, got "soon"`}},
		{"below minimum", "thresholds:\n  fanout-min-calls: 1\n", []string{`c.yaml:2: thresholds.fanout-min-calls: fanout-min-calls must be at least`}},
		{"threshold list", "thresholds:\n  uneven-ratio: [3]\n", []string{`c.yaml:2: thresholds.uneven-ratio: want a value such as 3 or 10s`}},
		{"unknown rule", "rules:\n  fork.unevn: off\n", []string{`c.yaml:2: rules.fork.unevn: no such rule; the rules are fanout.missed`}},
		{"rule value", "rules:\n  fork.uneven: maybe\n", []string{`c.yaml:2: rules.fork.uneven: want off or on, got "maybe"`}},
		{"research not a list", "research: read*\n", []string{`c.yaml:1: research: want a list of tool-name patterns`}},
		{"research star", "research: [\"*\", \"re*ad\"]\n", []string{`c.yaml:1: research[0]: "*" would count every tool`, `c.yaml:1: research[1]: "re*ad": a pattern may only end in *`}},
		{"price not a mapping", "prices:\n  m: 1\n", []string{`c.yaml:2: prices.m: want the model's prices per million tokens`}},
		{"price key", "prices:\n  m: {input: 1, output: 2, cached: 1}\n", []string{`c.yaml:2: prices.m.cached: unknown key; a model's prices are input, cached_input, cache_write, output`}},
		{"price value", "prices:\n  m:\n    input: -1\n    output: 2\n", []string{`c.yaml:3: prices.m.input: want a price per million tokens (a number, 0 or more), got "-1"`}},
		{"price missing", "prices:\n  m: {input: 1}\n", []string{`c.yaml:2: prices.m: missing output`}},
		{"price pattern", "prices:\n  \"a*b\": {input: 1, output: 1}\n", []string{`c.yaml:2: prices.a*b: a model name, or a prefix ending in *`}},
		{"currency", "currency: dollars\nprices: {m: {input: 1, output: 1}}\n", []string{`c.yaml:1: currency: want a three-letter ISO code`}},
		{"currency alone", "currency: USD\n", []string{`c.yaml:1: currency: currency without prices:`}},
		{"lifetime", "cache-lifetime: 0s\n", []string{`c.yaml:1: cache-lifetime: want a duration above zero`}},
		{"ignore not a list", "ignore: {rule: fork.uneven}\n", []string{`c.yaml:1: ignore: want a list of entries`}},
		{"ignore entries", "ignore:\n  - rule: fork.unevn\n    reason: x\n  - rule: fork.uneven\n  - reason: r\n  - rule: fork.uneven\n    reason: r\n    expires: next week\n    fingerprint: abc\n    owner: me\n",
			[]string{
				`c.yaml:2: ignore[0].rule: no rule "fork.unevn"`,
				`c.yaml:4: ignore[1].reason: missing reason`,
				`c.yaml:5: ignore[2]: missing rule`,
				`c.yaml:8: ignore[3].expires: want the last day the entry holds as YYYY-MM-DD, got "next week"`,
				`c.yaml:9: ignore[3].fingerprint: want the 16 hex digits of a finding's id`,
				`c.yaml:10: ignore[3].owner: unknown key; an ignore entry has rule, agent, fingerprint, reason, expires`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.yaml), "c.yaml")
			if err == nil {
				t.Fatalf("Parse = %+v, want an error", c)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T %v is not config.Errors", err, err)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%v", len(errs), len(tt.want), err)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to start with %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestParse_EmptyAndComments(t *testing.T) {
	for _, s := range []string{"", "# nothing yet\n", "thresholds:\nrules:\nignore:\n"} {
		c, err := Parse([]byte(s), "c.yaml")
		if err != nil || len(c.Thresholds)+len(c.Rules)+len(c.Ignore) != 0 || c.Prices != nil {
			t.Errorf("Parse(%q) = %+v, %v; want an empty config", s, c, err)
		}
	}
}

func TestFind(t *testing.T) {
	root := t.TempDir()
	t.Setenv("HOME", filepath.Join(root, "home"))
	deep := filepath.Join(root, "repo", "sub", "deeper")
	for _, d := range []string{deep, filepath.Join(root, "repo", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := Find(deep); err != nil || p != "" && strings.HasPrefix(p, root) {
		t.Fatalf("Find with no file = %q, %v", p, err)
	}
	repo := filepath.Join(root, "repo", FileName)
	sub := filepath.Join(root, "repo", "sub", FileName)
	for _, p := range []string{repo, sub} {
		if err := os.WriteFile(p, []byte("thresholds: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if p, err := Find(deep); err != nil || p != sub {
		t.Errorf("Find(deeper) = %q, %v; want the nearest, %s", p, err, sub)
	}
	if p, err := Find(filepath.Join(root, "repo")); err != nil || p != repo {
		t.Errorf("Find(repo) = %q, %v; want %s", p, err, repo)
	}
	if got := DisplayName(sub, deep); got != filepath.Join("..", FileName) {
		t.Errorf("DisplayName = %q, want ../%s", got, FileName)
	}
	// a folder of that name is not a config
	odd := filepath.Join(root, "odd")
	if err := os.MkdirAll(filepath.Join(odd, FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Find(odd); err == nil {
		t.Error("Find took a folder for the config file")
	}
}

// TestFind_Bounds: the policy file is looked for up to the repository
// root (a .git folder, or a worktree's .git file) or the home folder,
// never above — a .inspect.yaml that someone else left in a folder above
// them (/tmp, the folder of every home) does not steer this team's audit.
// Outside both, only the working folder itself is looked in.
func TestFind_Bounds(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home", "me")
	t.Setenv("HOME", home)
	mk := func(parts ...string) string {
		t.Helper()
		d := filepath.Join(append([]string{root}, parts...)...)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	put := func(dir string) string {
		t.Helper()
		p := filepath.Join(dir, FileName)
		if err := os.WriteFile(p, []byte("thresholds: {}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("home", "me")
	put(root)                        // above everything: never read
	put(filepath.Join(root, "home")) // above the home folder: never read
	mk("repo", ".git")
	mk("wt")
	if err := os.WriteFile(filepath.Join(root, "wt", ".git"), []byte("gitdir: elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir, want string
	}{
		{"above the repository root", mk("repo", "sub"), ""},
		{"above a worktree's root", mk("wt", "sub"), ""},
		{"above home", mk("home", "me", "notes"), ""},
		{"outside repository and home, a folder up", mk("loose", "sub"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Find(tt.dir); err != nil || got != tt.want {
				t.Errorf("Find(%s) = %q, %v; want %q", tt.dir, got, err, tt.want)
			}
		})
	}
	// within the bounds the nearest file is found, the bound's own included
	for _, tt := range []struct{ name, file, from string }{
		{"the repository root's", put(filepath.Join(root, "repo")), mk("repo", "sub", "deeper")},
		{"the worktree root's", put(filepath.Join(root, "wt")), mk("wt", "sub")},
		{"the home folder's", put(home), mk("home", "me", "notes", "x")},
		{"the working folder's own", put(mk("loose", "sub")), filepath.Join(root, "loose", "sub")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Find(tt.from); err != nil || got != tt.file {
				t.Errorf("Find(%s) = %q, %v; want %q", tt.from, got, err, tt.file)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, []byte(full), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p, FileName)
	if err != nil || c.Path != p || c.Name != FileName || len(c.Ignore) != 2 {
		t.Fatalf("Load = %+v, %v", c, err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", maxSize)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, "big.yaml"); err == nil || !strings.Contains(err.Error(), "big.yaml: larger than") {
		t.Errorf("Load of a huge file = %v", err)
	}
	if _, err := Load(dir, "dir"); err == nil {
		t.Error("Load read a folder")
	}
}

// TestTemplate: what inspect init writes parses as it is (every default)
// and, with every commented setting uncommented, sets every section.
func TestTemplate(t *testing.T) {
	tpl := Template([]string{"read*", "get*"})
	c, err := Parse([]byte(tpl), FileName)
	if err != nil {
		t.Fatalf("the template does not parse: %v", err)
	}
	if len(c.Thresholds)+len(c.Rules)+len(c.Ignore)+len(c.Research) != 0 || c.Prices != nil {
		t.Errorf("the template sets something: %+v", c)
	}
	for _, s := range findings.OptionSpecs(rules.All) {
		if !strings.Contains(tpl, "#   "+s.Name+": "+s.Default()) {
			t.Errorf("the template lacks threshold %s at its default", s.Name)
		}
	}
	setting := regexp.MustCompile(`^# ( *[a-z][a-z0-9_.*-]*:( |$)|\s+- )`)
	var lines []string
	for _, l := range strings.Split(tpl, "\n") {
		if setting.MatchString(l) {
			l = strings.TrimPrefix(l, "# ")
		}
		lines = append(lines, l)
	}
	c, err = Parse([]byte(strings.Join(lines, "\n")), FileName)
	if err != nil {
		t.Fatalf("the uncommented template does not parse: %v", err)
	}
	if len(c.Thresholds) != len(findings.OptionSpecs(rules.All)) || len(c.Rules) != 1 || len(c.Research) != 2 ||
		c.Prices == nil || len(c.Prices.Prices) != 2 || c.CacheLifetime != 5*time.Minute || len(c.Ignore) != 1 {
		t.Errorf("uncommented template = %+v", c)
	}
}
