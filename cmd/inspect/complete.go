package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/inspect-dev/inspect/record"
	"github.com/spf13/cobra"
)

// Shell completion of run and node references (DESIGN §11). Completion
// only reads: a database that does not exist offers nothing (it is never
// created), and any error is an empty list, never a message in the shell.

// completionLimit caps how many runs a completion offers (newest first).
const completionLimit = 50

// completeRuns offers "latest" and the recorded run ids, each described by
// its status and first task.
func completeRuns(f *Factory, toComplete string) []string {
	out := []string{"latest\tthe newest run"}
	if dbExists(f.DBPath) != nil {
		return out
	}
	db, err := f.ReadStore(context.Background(), f.DBPath)
	if err != nil {
		return out
	}
	runs, err := db.Runs(context.Background(), completionLimit)
	if err != nil {
		return out
	}
	for _, r := range runs {
		if !strings.HasPrefix(r.ID, toComplete) {
			continue
		}
		task := ""
		if len(r.Tasks) > 0 {
			task = " · " + oneLine(r.Tasks[0], 50)
		}
		out = append(out, fmt.Sprintf("%s\t%s%s", r.ID, r.Status, task))
	}
	return out
}

// completeNodes offers the node references n<seq> of run ref that start
// with toComplete (at most completionLimit, read by index ranges, not by
// loading the run), each described by its kind and agent; llmOnly keeps the
// llm nodes (inspect ask).
func completeNodes(f *Factory, ref, toComplete string, llmOnly bool) []string {
	if dbExists(f.DBPath) != nil && ParseRunRef(ref).DB == "" {
		return nil
	}
	ctx := context.Background()
	db, id, err := openRun(ctx, f, ref)
	if err != nil {
		return nil
	}
	nodes, err := db.NodeList(ctx, id, toComplete, llmOnly, completionLimit)
	if err != nil {
		return nil
	}
	var out []string
	for _, n := range nodes {
		desc := string(n.Kind)
		if n.Agent != "" {
			desc += " @" + n.Agent
		}
		if n.Kind == record.KindLLM {
			if len(n.Calls) > 0 {
				desc += " calls " + strings.Join(n.Calls, ", ")
			} else {
				desc += " answers"
			}
		}
		out = append(out, fmt.Sprintf("n%d\t%s", n.Seq, desc))
	}
	return out
}

// runArgsCompletion completes the first n positional arguments as run
// references (graph, audit: 1; diff: 2).
func runArgsCompletion(f *Factory, n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return completeRuns(f, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// runNodeCompletion completes "[RUN] NODE": first a node of the latest run
// or a run, then, after a run, a node of that run.
func runNodeCompletion(f *Factory, llmOnly bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0 && strings.HasPrefix(toComplete, "n"):
			return completeNodes(f, "latest", toComplete, llmOnly), cobra.ShellCompDirectiveNoFileComp
		case len(args) == 0:
			return append(completeNodes(f, "latest", "", llmOnly), completeRuns(f, toComplete)...), cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 && !askNodeArg.MatchString(args[0]):
			return completeNodes(f, args[0], toComplete, llmOnly), cobra.ShellCompDirectiveNoFileComp
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

// oneLine shortens s to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// withDefaultCommandExamples gives cobra's own help and completion
// commands the examples every command carries (DESIGN §11).
func withDefaultCommandExamples(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Example = `  inspect help audit
  inspect help ask`
		case "completion":
			c.Example = `  source <(inspect completion bash)
  inspect completion zsh > "${fpath[1]}/_inspect"
  inspect completion fish > ~/.config/fish/completions/inspect.fish`
			for _, sh := range c.Commands() {
				switch sh.Name() {
				case "bash":
					sh.Example = `  source <(inspect completion bash)
  inspect completion bash > /etc/bash_completion.d/inspect`
				case "zsh":
					sh.Example = `  inspect completion zsh > "${fpath[1]}/_inspect"`
				case "fish":
					sh.Example = `  inspect completion fish > ~/.config/fish/completions/inspect.fish`
				case "powershell":
					sh.Example = `  inspect completion powershell | Out-String | Invoke-Expression`
				}
			}
		}
	}
}
