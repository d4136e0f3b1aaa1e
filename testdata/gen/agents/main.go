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

// otelOn and collectBin are -otel and -collect.
var (
	otelOn     bool
	collectBin string
)

func main() {
	out := flag.String("out", "", "folder that receives <cli>/<scenario>/ (required)")
	cli := flag.String("cli", "claude", "CLIs to run, comma-separated: claude, codex, gemini")
	only := flag.String("scenario", "", "run only these scenarios (comma-separated)")
	bin := flag.String("bin", "", "folder holding the CLIs (default: node_modules/.bin beside this program's package.json)")
	root := flag.String("root", "/tmp/inspect-harness", "where each scenario's workspace and HOME are made (fixed, so sessions name the same paths each time)")
	bodies := flag.Bool("bodies", false, "also keep every request body in <cli>/<scenario>/bodies/ (to study a CLI; not for fixtures)")
	timeout := flag.Duration("timeout", 3*time.Minute, "how long one scenario may run")
	fixtures := flag.Bool("fixtures", false, "keep only what the tests read (session/, otlp/, requests.jsonl, scenario.json): for testdata/agents")
	flag.BoolVar(&otelOn, "otel", false, "turn on each CLI's own OpenTelemetry trace export, to the server, which keeps it in <cli>/<scenario>/otlp/")
	flag.StringVar(&collectBin, "collect", "", "an inspect binary: run `inspect collect` inside the namespace for each scenario (its database in <cli>/<scenario>/collect.db) and hand it the CLI's traces live (implies -otel)")
	newest := flag.Bool("newest", false, "install the newest versions of the CLIs from npm into a temporary folder and run those (drift)")
	check := flag.Bool("check", false, "then import every scenario's session and compare it with its log (go test ./importers/all -run TestAgents), and report what no longer imports to its log")
	flag.Parse()
	if *check {
		otelOn = true // the traces are compared too
	}
	if collectBin != "" {
		otelOn = true
		if abs, err := filepath.Abs(collectBin); err == nil {
			collectBin = abs
		}
	}
	if os.Getenv(inNetns) == "" {
		// outside the namespace: what needs the network (npm), then the
		// run inside it, then the comparison
		args := os.Args[1:]
		installed := "" // the folder -newest installed into, removed at the end
		if *out == "" && (*newest || *check) {
			d, err := os.MkdirTemp("", "agents-out-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "agents:", err)
				os.Exit(1)
			}
			*out = d
			args = append(args, "-out", d)
		}
		if *out == "" {
			fmt.Fprintln(os.Stderr, "agents: give -out DIR")
			os.Exit(2)
		}
		if *newest {
			b, err := installNewest()
			if err != nil {
				fmt.Fprintln(os.Stderr, "agents: install the newest CLIs:", err)
				os.Exit(1)
			}
			installed = filepath.Dir(filepath.Dir(b))
			args = append(args, "-bin", b)
		}
		code := reexec(args)
		if *check {
			if c := checkImports(*out, *cli); c > code {
				code = c
			}
			fmt.Println("the sessions and logs are in", *out)
		}
		if installed != "" {
			_ = os.RemoveAll(installed)
		}
		os.Exit(code)
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
			if err == nil && *fixtures {
				// the CLI's output names where it is installed
				for _, f := range []string{"stdout.txt", "stderr.txt", "collect.db", "collect.log"} {
					_ = os.Remove(filepath.Join(dest, f))
				}
			}
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

// reexec runs this program again, with args, in a new network namespace
// with only loopback.
func reexec(args0 []string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agents:", err)
		return 1
	}
	args := []string{"-n"}
	if os.Geteuid() != 0 {
		args = append(args, "-r") // a user namespace maps us to root in it
	}
	cmd := exec.Command("unshare", append(append(args, "--", self), args0...)...)
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
	if otelOn {
		srv.otlpDir = filepath.Join(dest, "otlp")
	}
	if collectBin != "" {
		stop, url, err := startCollect(collectBin, dest)
		if err != nil {
			return err
		}
		defer stop()
		srv.collector = url
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
	// command is the CLI run on one prompt; resumed, on the session the
	// previous run left (a later user turn)
	var command func(prompt string, resumed bool) *exec.Cmd
	switch cli {
	case "claude":
		command = func(prompt string, resumed bool) *exec.Cmd {
			args := []string{"-p", prompt, "--output-format", "json", "--allowedTools", "Read,Agent,Bash,SendMessage,ToolSearch"}
			if resumed {
				args = append(args, "--continue")
			}
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "claude"), args...)
			cmd.Env = append(baseEnv(home), "ANTHROPIC_BASE_URL="+base, "ANTHROPIC_API_KEY=harness-placeholder-key",
				"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
			if otelOn {
				// Claude Code's traces, with the enhanced-telemetry beta's
				// claude_code.* spans (agent ids, tool use ids)
				cmd.Env = append(cmd.Env, "CLAUDE_CODE_ENABLE_TELEMETRY=1", "CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1",
					"OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
					"OTEL_EXPORTER_OTLP_PROTOCOL=http/json", "OTEL_EXPORTER_OTLP_ENDPOINT="+base, "OTEL_TRACES_EXPORT_INTERVAL=500")
			}
			return cmd
		}
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

[features.multi_agent_v2]
enabled = true
max_concurrent_threads_per_session = 8

`, base)
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(conf), 0o644); err != nil {
			return err
		}
		command = func(prompt string, resumed bool) *exec.Cmd {
			args := []string{"exec", "--skip-git-repo-check", prompt}
			if resumed {
				args = []string{"exec", "resume", "--skip-git-repo-check", "--last", prompt}
			}
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "codex"), args...)
			cmd.Env = append(baseEnv(home), "CODEX_HOME="+home, "HARNESS_API_KEY=harness-placeholder-key")
			return cmd
		}
	case "gemini":
		if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o755); err != nil {
			return err
		}
		settings := `{"security":{"auth":{"selectedType":"gemini-api-key"}}}` + "\n"
		if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
			return err
		}
		command = func(prompt string, resumed bool) *exec.Cmd {
			args := []string{"-p", prompt, "--yolo"}
			if resumed {
				args = append(args, "--resume", "latest")
			}
			cmd := exec.CommandContext(ctx, filepath.Join(bin, "gemini"), args...)
			cmd.Env = append(baseEnv(home), "GEMINI_API_KEY=harness-placeholder-key", "GOOGLE_GEMINI_BASE_URL="+base,
				"GEMINI_CLI_TRUST_WORKSPACE=true")
			if otelOn {
				cmd.Env = append(cmd.Env, "GEMINI_TELEMETRY_ENABLED=true", "GEMINI_TELEMETRY_TARGET=local",
					"GEMINI_TELEMETRY_TRACES_ENABLED=true", "GEMINI_TELEMETRY_OTLP_ENDPOINT="+base, "GEMINI_TELEMETRY_OTLP_PROTOCOL=http")
			}
			return cmd
		}
	default:
		return fmt.Errorf("unknown CLI %q", cli)
	}
	stdout, _ := os.Create(filepath.Join(dest, "stdout.txt"))
	stderr, _ := os.Create(filepath.Join(dest, "stderr.txt"))
	defer stdout.Close()
	defer stderr.Close()
	prompts := append([]string{prompt}, sc.Then[cli]...)
	var exits []int
	var runErr error
	for i, p := range prompts {
		cmd := command(p, i > 0)
		cmd.Dir = work
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// the CLI and what it starts are a process group of their own, as
		// a terminal's foreground job is: Ctrl-C signals the group, and so
		// does the interrupt (Gemini CLI's outer process waits for the one
		// it relaunches, which handles the signal)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		if err := cmd.Start(); err != nil {
			return err
		}
		srv.setInterrupt(func() {
			time.Sleep(500 * time.Millisecond)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		})
		err := cmd.Wait()
		if ctx.Err() != nil {
			return fmt.Errorf("timed out after %s", timeout)
		}
		exits = append(exits, cmd.ProcessState.ExitCode())
		if err != nil && runErr == nil {
			runErr = err
		}
	}
	if err := collect(cli, home, dest); err != nil {
		return err
	}
	meta := map[string]any{"cli": cli, "version": cliVersion(bin, cli), "scenario": sc.Name, "prompts": prompts,
		"workspace": work, "exit": exits, "interrupted": sc.Interrupt, "plan": sc.plan(cli)}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(dest, "scenario.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	if runErr != nil && sc.Interrupt == "" {
		return fmt.Errorf("%s exited: %v (see stderr.txt)", cli, runErr)
	}
	return nil
}

// startCollect runs `inspect collect` on a free loopback port with its
// database in dest/collect.db; stop ends it with Ctrl-C (it writes what it
// holds) once the CLI's last export had time to come.
func startCollect(bin, dest string) (stop func(), url string, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	log, _ := os.Create(filepath.Join(dest, "collect.log"))
	cmd := exec.Command(bin, "collect", "--listen", addr, "--db", filepath.Join(dest, "collect.db"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "HOME="+dest)
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	return func() {
		time.Sleep(time.Second)
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
		log.Close()
	}, "http://" + addr, nil
}

// cliVersion is the version of cli's package installed beside bin
// (node_modules/.bin), or "".
func cliVersion(bin, cli string) string {
	pkg := map[string]string{"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex", "gemini": "@google/gemini-cli"}[cli]
	b, err := os.ReadFile(filepath.Join(bin, "..", pkg, "package.json"))
	if err != nil {
		return ""
	}
	var v struct {
		Version string `json:"version"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Version
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
