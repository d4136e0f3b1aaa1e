// Command agents runs real coding-agent CLIs (Claude Code, Codex, Gemini
// CLI, pinned in package.json beside it) against a scripted model server on
// 127.0.0.1, inside a loopback-only network namespace (unshare -n: nothing
// can leave the machine), each with a throwaway HOME, and keeps what each
// scenario leaves: the CLI's session files and the server's request log,
// the ground truth importers are tested against (DESIGN §18).
//
//	npm ci --prefix testdata/gen/agents          # the pinned CLIs
//	go run ./testdata/gen/agents -out DIR [-cli claude] [-scenario NAME]
//
// It re-executes itself under `unshare -n` (root, or a user namespace).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const inNetns = "INSPECT_HARNESS_NETNS"

func main() {
	out := flag.String("out", "", "folder that receives <cli>/<scenario>/ (required)")
	cli := flag.String("cli", "claude", "CLIs to run, comma-separated: claude, codex, gemini")
	only := flag.String("scenario", "", "run only these scenarios (comma-separated)")
	bin := flag.String("bin", "", "folder holding the CLIs (default: node_modules/.bin beside this program's package.json)")
	root := flag.String("root", "/tmp/inspect-harness", "where each scenario's workspace and HOME are made (fixed, so sessions name the same paths each time)")
	bodies := flag.Bool("bodies", false, "also keep every request body in <cli>/<scenario>/bodies/ (to study a CLI; not for fixtures)")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long one scenario may run")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "agents: give -out DIR")
		os.Exit(2)
	}
	if os.Getenv(inNetns) == "" {
		os.Exit(reexec())
	}
	if err := exec.Command("ip", "link", "set", "lo", "up").Run(); err != nil {
		fmt.Fprintln(os.Stderr, "agents: bring loopback up:", err)
		os.Exit(1)
	}
	if *bin == "" {
		*bin = "testdata/gen/agents/node_modules/.bin"
	}
	absBin, _ := filepath.Abs(*bin)
	failed := 0
	for _, c := range strings.Split(*cli, ",") {
		for _, sc := range scenarios {
			if *only != "" && !contains(strings.Split(*only, ","), sc.Name) || !sc.forCLI(c) {
				continue
			}
			dest := filepath.Join(*out, c, sc.Name)
			start := time.Now()
			err := runScenario(c, sc, absBin, filepath.Join(*root, c+"-"+sc.Name), dest, *timeout, *bodies)
			status := "ok"
			if err != nil {
				status = "FAILED: " + err.Error()
				failed++
			}
			fmt.Printf("%-7s %-24s %6.1fs  %s\n", c, sc.Name, time.Since(start).Seconds(), status)
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}

// reexec runs this program again in a new network namespace with only
// loopback.
func reexec() int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agents:", err)
		return 1
	}
	args := []string{"-n"}
	if os.Geteuid() != 0 {
		args = append(args, "-r") // a user namespace maps us to root in it
	}
	cmd := exec.Command("unshare", append(append(args, "--", self), os.Args[1:]...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), inNetns+"=1")
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintln(os.Stderr, "agents: unshare -n:", err)
		return 1
	}
	return 0
}

func runScenario(cli string, sc *Scenario, bin, root, dest string, timeout time.Duration, bodies bool) error {
	if err := os.RemoveAll(root); err != nil {
		return err
	}
	work, home := filepath.Join(root, "work"), filepath.Join(root, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	for name, text := range sc.Files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dest, "requests.jsonl"))
	if err != nil {
		return err
	}
	defer logf.Close()
	srv := newServer(sc, work, logf)
	if bodies {
		srv.bodies = filepath.Join(dest, "bodies")
		if err := os.MkdirAll(srv.bodies, 0o755); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(ln)
	defer hs.Close()
	base := "http://" + ln.Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	prompt := fmt.Sprintf("[scenario:%s] %s", sc.Name, sc.Task)
	var cmd *exec.Cmd
	switch cli {
	case "claude":
		cmd = exec.CommandContext(ctx, filepath.Join(bin, "claude"), "-p", prompt, "--output-format", "json",
			"--allowedTools", "Read,Agent,Bash")
		cmd.Env = append(baseEnv(home), "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=harness-placeholder-key",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	case "codex":
		conf := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "harness"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.harness]
name = "harness"
base_url = "%s/v1"
env_key = "HARNESS_API_KEY"
wire_api = "responses"

[features]
multi_agent_v2 = true
`, base)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o644); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, filepath.Join(bin, "codex"), "exec", "--skip-git-repo-check", prompt)
		cmd.Env = append(baseEnv(home), "CODEX_HOME="+home, "HARNESS_API_KEY=harness-placeholder-key")
	case "gemini":
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
			return err
		}
		settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}}}` + "\n"
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, filepath.Join(bin, "gemini"), "-p", prompt, "--yolo")
		cmd.Env = append(baseEnv(home), "GEMINI_API_KEY=harness-placeholder-key", "GOOGLE_GEMINI_BASE_URL="+base,
			"GEMINI_CLI_TRUST_WORKSPACE=true")
	default:
		return fmt.Errorf("unknown CLI %q", cli)
	}
	cmd.Dir = work
	stdout, _ := os.Create(filepath.Join(dest, "stdout.txt"))
	stderr, _ := os.Create(filepath.Join(dest, "stderr.txt"))
	defer stdout.Close()
	defer stderr.Close()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	srv.interrupt = func() {
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGINT)
	}
	runErr := cmd.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("timed out after %s", timeout)
	}
	if err := collect(cli, home, dest); err != nil {
		return err
	}
	meta := map[string]any{"cli": cli, "scenario": sc.Name, "prompt": prompt, "workspace": work,
		"exit": cmd.ProcessState.ExitCode(), "interrupted": sc.Interrupt != ""}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(dest, "scenario.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if runErr != nil && sc.Interrupt == "" {
		return fmt.Errorf("%s exited: %v (see stderr.txt)", cli, runErr)
	}
	return nil
}

func baseEnv(home string) []string {
	return []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "TERM=dumb", "TZ=UTC"}
}

// collect copies the session files the CLI left under home into
// dest/session.
func collect(cli, home, dest string) error {
	var from string
	switch cli {
	case "claude":
		from = filepath.Join(home, ".claude", "projects")
	case "codex":
		from = filepath.Join(home, "sessions")
	case "gemini":
		from = filepath.Join(home, ".gemini", "tmp")
	}
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		to := filepath.Join(dest, "session", rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
