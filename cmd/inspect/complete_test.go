package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command, cobra's own help and completion included, shows examples
// in its --help (DESIGN §11).
func TestEveryCommandHasExamples(t *testing.T) {
	f, _, _ := testFactory(t)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if !c.HasExample() && !c.Hidden {
			t.Errorf("%q has no examples in its --help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := NewCmdRoot(f)
	root.InitDefaultHelpCmd() // as Execute would; the walk must see them
	root.InitDefaultCompletionCmd()
	walk(root)
}

// completions runs `inspect __complete args...` and returns the offered
// words (without their descriptions and cobra's directive line).
func completions(t *testing.T, f *Factory, out *bytes.Buffer, args ...string) []string {
	t.Helper()
	out.Reset()
	if code := run(t.Context(), f, append([]string{"__complete", "--db", f.DBPath}, args...)); code != ExitOK {
		t.Fatalf("__complete %v exit %d", args, code)
	}
	var got []string
	for _, l := range strings.Split(out.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, ":") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
	}
	return got
}

// Shell completion offers run references and node references; it never
// creates the database it is pointed at.
func TestCompletion(t *testing.T) {
	f, out, _ := testFactory(t)
	g := recordFixture(t, f, "fanout-compact")
	f.Close()
	complete := func(args ...string) []string { t.Helper(); return completions(t, f, out, args...) }
	has := func(got []string, want string) bool {
		for _, g := range got {
			if g == want {
				return true
			}
		}
		return false
	}
	for _, args := range [][]string{{"graph", ""}, {"audit", ""}, {"diff", ""}, {"diff", "latest", ""}, {"show", ""}} {
		if got := complete(args...); !has(got, "latest") || !has(got, g.ID) {
			t.Errorf("complete %v = %v, want latest and %s", args, got, g.ID)
		}
	}
	if got := complete("graph", "x", ""); len(got) != 0 {
		t.Errorf("complete graph RUN <tab> = %v, want nothing", got)
	}
	if got := complete("show", g.ID, ""); !has(got, "n1") || !has(got, "n3") {
		t.Errorf("complete show RUN <tab> = %v, want its nodes", got)
	}
	got := complete("ask", "n")
	if !has(got, "n2") || has(got, "n1") || has(got, "n3") {
		t.Errorf("complete ask n<tab> = %v, want the llm nodes only (n2, not the user n1 or the tool n3)", got)
	}

	missing := f.DBPath + ".missing"
	f.DBPath = missing
	out.Reset()
	run(t.Context(), f, []string{"__complete", "--db", missing, "graph", ""})
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("completion created %s", missing)
	}
}

// Every flag that takes a value names it in our words (--task TEXT, --db
// FILE), never by its Go type as cobra would (--task stringArray, --limit
// int): issue 12, item 14.
func TestFlags_NameTheirValue(t *testing.T) {
	f, _, _ := testFactory(t)
	jargon := map[string]bool{"string": true, "stringArray": true, "strings": true, "int": true, "int64": true,
		"uint": true, "float": true, "float64": true, "duration": true, "stringSlice": true}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(fl *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(fl); jargon[name] {
				t.Errorf("%s --%s shows its value as %q; name it in the usage with backquotes (e.g. `FILE`)", c.CommandPath(), fl.Name, name)
			}
		}
		c.LocalFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewCmdRoot(f))
}
