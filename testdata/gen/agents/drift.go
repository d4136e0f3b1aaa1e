package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// packages are the CLIs' npm packages, as package.json pins them.
var packages = []string{"@anthropic-ai/claude-code", "@openai/codex", "@google/gemini-cli"}

// installNewest installs the newest published version of each CLI into a
// temporary folder (npm's own client, as a user would) and returns its
// node_modules/.bin.
func installNewest() (string, error) {
	dir, err := os.MkdirTemp("", "agents-newest-")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"private": true}`+"\n"), 0o644); err != nil {
		return "", err
	}
	args := []string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error"}
	for _, p := range packages {
		args = append(args, p+"@latest")
	}
	cmd := exec.Command("npm", args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", err
	}
	return filepath.Join(dir, "node_modules", ".bin"), nil
}

// checkImports imports every scenario run under out and compares it with
// its log (the tests of importers/all, pointed at out), then reports per
// CLI and scenario whether it imports to its log, and which checks do
// not. It returns 1 when one does not.
func checkImports(out, clis string) int {
	tests := map[string][]string{"claude": {"TestAgents_ClaudeCode", "TestAgents_ClaudeCodeOTLP"},
		"codex": {"TestAgents_Codex"}, "gemini": {"TestAgents_GeminiCLI"}}
	var run []string
	for _, c := range strings.Split(clis, ",") {
		run = append(run, tests[c]...)
	}
	cmd := exec.Command("go", "test", "./importers/all", "-run", "^("+strings.Join(run, "|")+")$", "-count=1", "-json")
	cmd.Env = append(os.Environ(), "INSPECT_AGENTS_OUT="+out, "INSPECT_REQUIRE_AGENTS=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, os.Stderr
	runErr := cmd.Run()
	type result struct{ failed, skipped []string }
	results := map[string]*result{} // "cli/scenario"
	names := map[string]string{"TestAgents_ClaudeCode": "claude", "TestAgents_ClaudeCodeOTLP": "claude-otlp",
		"TestAgents_Codex": "codex", "TestAgents_GeminiCLI": "gemini"}
	var top []string // what a test said outside any scenario (it found none, say)
	output := map[string]*strings.Builder{}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.Test == "" {
			continue
		}
		parts := strings.SplitN(ev.Test, "/", 3)
		cli := names[parts[0]]
		if cli != "" && len(parts) == 1 && ev.Action == "output" {
			if t := strings.TrimSpace(ev.Output); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
				top = append(top, parts[0]+": "+t)
			}
		}
		if cli == "" || len(parts) < 2 {
			continue
		}
		key := cli + "/" + parts[1]
		r := results[key]
		if r == nil {
			r = &result{}
			results[key] = r
		}
		if ev.Action == "output" && len(parts) == 3 {
			if output[key] == nil {
				output[key] = &strings.Builder{}
			}
			if t := strings.TrimSpace(ev.Output); t != "" && !strings.HasPrefix(t, "=== ") && !strings.HasPrefix(t, "--- ") {
				output[key].WriteString("      " + t + "\n")
			}
		}
		if len(parts) < 3 {
			continue
		}
		switch ev.Action {
		case "fail":
			r.failed = append(r.failed, parts[2])
		case "skip":
			r.skipped = append(r.skipped, parts[2])
		}
	}
	var keys []string
	for k := range results {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := 0
	fmt.Println()
	fmt.Println("imports to its log:")
	for _, k := range keys {
		r := results[k]
		version := versionOf(filepath.Join(out, strings.Replace(k, "-otlp/", "/", 1)))
		switch {
		case len(r.failed) > 0:
			bad++
			fmt.Printf("  %-36s %-10s no: %s\n", k, version, strings.Join(r.failed, ", "))
			if o := output[k]; o != nil {
				fmt.Print(o.String())
			}
		case len(r.skipped) > 0:
			fmt.Printf("  %-36s %-10s yes (known gaps skipped: %s)\n", k, version, strings.Join(r.skipped, ", "))
		default:
			fmt.Printf("  %-36s %-10s yes\n", k, version)
		}
	}
	for _, l := range top {
		fmt.Println("  " + l)
	}
	if runErr != nil && bad == 0 {
		fmt.Fprintln(os.Stderr, "agents: the comparison failed outside the scenarios:", runErr)
		return 1
	}
	if bad > 0 {
		return 1
	}
	return 0
}

// versionOf is the CLI version a scenario run's scenario.json names.
func versionOf(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "scenario.json"))
	if err != nil {
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Version
}
