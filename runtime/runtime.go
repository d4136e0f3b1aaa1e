// Package runtime runs a multi-agent project and records every step of it in
// the store: the agent loop of DESIGN §4 with its hand-offs, forks and joins,
// the tools, and the choice of model provider. Run is the entry point; the
// record it writes follows docs/recording.md.
//
// Sub-packages do one job each: project loads agents.yaml and its prompt
// files, model is the provider interface, scripted and openaicompat are the
// two providers, tools runs the workspace and command tools.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/inspect-dev/inspect/internal/secret"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/runtime/model"
	"github.com/inspect-dev/inspect/runtime/openaicompat"
	"github.com/inspect-dev/inspect/runtime/project"
	"github.com/inspect-dev/inspect/runtime/scripted"
	"github.com/inspect-dev/inspect/runtime/tools"
	"github.com/inspect-dev/inspect/store"
)

// DefaultMaxParallel bounds the branches of one fork that run at once.
const DefaultMaxParallel = 8

// Config says what to run and where to record it. Project and DB are
// required; everything else has a default.
type Config struct {
	// Project is the project folder (the one holding agents.yaml).
	Project string
	// Script is a script.yaml path: the run uses the scripted model. Empty
	// means the OpenAI-compatible provider (or Provider, when set).
	Script string
	// Tasks are the user turns, in order. Empty means the script's task(s).
	Tasks []string
	// DB receives the run.
	DB *store.DB
	// OpenDB opens the database when DB is nil. Run calls it only once the
	// project, the script, the model and the tasks have been checked, so a
	// run refused for its input leaves no new database file behind.
	OpenDB func(context.Context) (*store.DB, error)
	// Now is the clock (nil = time.Now). In virtual time it only gives the
	// run's start; every node time is that start plus virtual time.
	Now func() time.Time
	// RunID is the id to record the run under ("" = a fresh one).
	RunID string
	// Realtime makes the scripted model really wait its latencies and run
	// branches concurrently; without it a scripted run is in virtual time,
	// branches run one after another in declared order and recorded times
	// are exact.
	Realtime bool
	// Progress receives one line per model call (conversation, agent,
	// step, calls); nil = none.
	Progress io.Writer
	// Provider overrides the provider chosen from Script and the
	// environment (tests use it). Time is virtual only for the scripted
	// model, so an override runs on the wall clock.
	Provider model.Provider
	// Getenv reads OPENAI_API_KEY and OPENAI_BASE_URL (nil = os.Getenv).
	Getenv func(string) string
	// OpenAI tunes the OpenAI-compatible provider (retries, backoff,
	// timeout); APIKey and BaseURL come from Getenv when empty.
	OpenAI openaicompat.Config
	// MaxParallel bounds the concurrent branches of one fork (0 = 8).
	MaxParallel int
	// MaxForkDepth and MaxSteps override agents.yaml when > 0.
	MaxForkDepth, MaxSteps int
	// Observer sees the run as it is recorded (inspect run --otlp-endpoint
	// streams it as spans); nil = none.
	Observer Observer
}

// Observer sees a run as it is recorded: Start once the run exists, Node
// after each node is durable (finished, or added complete), Finish once
// the run is closed. Calls come from the run's goroutines, concurrently
// for concurrent branches; an observer never fails the run.
type Observer interface {
	Start(ctx context.Context, run *record.Run)
	Node(ctx context.Context, n *record.Node)
	Finish(ctx context.Context, status record.Status, errMsg string, ended time.Time)
}

// InputError is a problem with what Run was asked to do — no task, no
// model, an unreadable script — that the user fixes by changing the command.
// An invalid project is a *project.LoadError instead.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// Result is what a recorded run came to.
type Result struct {
	RunID  string
	Status record.Status // ok, error (the trunk failed) or cancelled
	Error  string        // why the run is not ok
	// ScriptError reports that the run ended in error only because of a
	// problem in the scripted model's script — an unusable reply, a
	// conversation with no reply left — that Error names by line: an input
	// the user fixes, not a failure of the provider or of inspect.
	ScriptError bool
	// ModelStatus is the HTTP status of the model call that failed the
	// trunk (401 a refused key, 404 a model the provider does not serve), 0
	// when no such call failed it.
	ModelStatus int
	Answer      string // the trunk's last final message
	Started     time.Time
	Ended       time.Time
	// Nodes counts the recorded nodes; LLMCalls the model calls among them.
	Nodes, LLMCalls int
	// FirstLLM is the seq of the run's first model call (0 when none was
	// recorded): the node a "why?" is first asked of.
	FirstLLM int64
	// Warnings are the project's load warnings (it ran anyway).
	Warnings []project.Diagnostic
}

// Elapsed is the run's recorded duration.
func (r *Result) Elapsed() time.Duration { return r.Ended.Sub(r.Started) }

// Check loads the project at dir without running it. The error is a
// *project.LoadError listing every error and warning when it cannot run.
func Check(dir string) (*project.Project, error) {
	return project.Load(dir)
}

// Run loads cfg.Project, runs its tasks and records the run in cfg.DB. The
// error is non-nil only when nothing could be run or recorded (a
// *project.LoadError for an invalid project, an *InputError for a missing
// task, model or script, or a database failure); a run whose trunk failed or was cancelled is recorded and comes
// back as a Result with that status. Cancelling ctx cancels the run: it is
// recorded as cancelled.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.DB == nil && cfg.OpenDB == nil {
		return nil, errors.New("runtime.Run: Config.DB and Config.OpenDB are nil")
	}
	if cfg.Project == "" {
		return nil, errors.New("runtime.Run: Config.Project is empty")
	}
	p, err := project.Load(cfg.Project)
	if err != nil {
		return nil, err
	}
	if cfg.MaxForkDepth > 0 {
		p.MaxForkDepth = cfg.MaxForkDepth
	}
	if cfg.MaxSteps > 0 {
		p.MaxSteps = cfg.MaxSteps
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}

	prov := cfg.Provider
	tasks := cfg.Tasks
	isScripted := false
	if prov == nil && cfg.Script != "" {
		s, err := scripted.Load(cfg.Script)
		if err != nil {
			return nil, &InputError{Err: err}
		}
		prov, isScripted = scripted.New(s), true
		if len(tasks) == 0 {
			tasks = s.Tasks
		}
	}
	red := secret.New() // the rules, and for a provider its key and password
	if prov == nil {
		oc := cfg.OpenAI
		env := openaicompat.FromEnv(getenv)
		if oc.APIKey == "" {
			oc.APIKey = env.APIKey
		}
		if oc.BaseURL == "" {
			oc.BaseURL = env.BaseURL
		}
		if oc.APIKey == "" && oc.BaseURL == "" {
			return nil, &InputError{Err: errors.New("no model to run with: pass --script S.yaml for the scripted model, or set OPENAI_API_KEY (and OPENAI_BASE_URL for a local or other OpenAI-compatible server)")}
		}
		if oc.BaseURL != "" {
			if u, err := url.Parse(oc.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, &InputError{Err: fmt.Errorf("OPENAI_BASE_URL %q is not an http(s) URL; set it to the server's API root, e.g. http://localhost:11434/v1", secret.URL(oc.BaseURL))}
			}
		}
		prov = openaicompat.New(oc)
		red = secret.New(oc.APIKey, secret.Password(oc.BaseURL))
	}
	if len(tasks) == 0 {
		return nil, &InputError{Err: errors.New("no task to run: pass --task, or give the script a `task:`")}
	}

	virtual := isScripted && !cfg.Realtime
	started := now()
	opts := record.Options{Runtime: &record.RuntimeOptions{
		MaxForkDepth: p.MaxForkDepth,
		MaxSteps:     p.MaxSteps,
		Realtime:     !virtual,
		Scripted:     isScripted,
	}}
	if isScripted {
		opts.Runtime.Script = cfg.Script
	}
	if dir, err := filepath.Abs(cfg.Project); err == nil {
		// where the project is, so SARIF can point at its files from a
		// repository root (report.SARIFPaths of findings/report)
		opts.ProjectDir = dir
	}
	run := &record.Run{
		ID:      cfg.RunID,
		Started: started,
		Tasks:   tasks,
		Project: record.Project{Name: p.Name, Files: p.Files},
		Options: opts,
		BaseURL: prov.BaseURL(),
		Models:  p.Models(),
	}
	rctx := context.WithoutCancel(ctx)
	db := cfg.DB
	if db == nil {
		if db, err = cfg.OpenDB(ctx); err != nil {
			return nil, err
		}
	}
	rec, err := db.CreateRun(rctx, run)
	if err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	if cfg.Observer != nil {
		cfg.Observer.Start(rctx, run)
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	r := &runner{
		cfg:         cfg,
		p:           p,
		prov:        prov,
		rec:         rec,
		rctx:        rctx,
		cancel:      cancelRun,
		ws:          &tools.Workspace{Dir: p.Workspace},
		now:         now,
		virtual:     virtual,
		maxParallel: cfg.MaxParallel,
		runID:       rec.RunID(),
		red:         red,
	}
	if r.maxParallel <= 0 {
		r.maxParallel = DefaultMaxParallel
	}
	if cfg.Progress != nil {
		r.progress = &lockedWriter{w: cfg.Progress}
	}

	trunk := &conversation{
		session: r.runID,
		agent:   p.Agents[0],
		clock:   r.newClock(started),
	}
	r.setAgent(trunk, p.Agents[0])
	res := &Result{RunID: r.runID, Started: started, Warnings: p.Warnings, Status: record.StatusOK}
	for _, task := range tasks {
		out := r.turn(runCtx, trunk, task)
		res.Answer = out.answer
		if out.status != record.StatusOK {
			res.Status, res.Error = out.status, out.err
			res.ScriptError = out.status == record.StatusError && out.script
			res.ModelStatus = out.httpStatus
			break
		}
	}
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		// a recording failure: the database is the problem, not the run
		rec.Finish(rctx, record.StatusError, cause.Error(), time.Time{})
		if cfg.Observer != nil {
			cfg.Observer.Finish(rctx, record.StatusError, cause.Error(), time.Time{})
		}
		return nil, cause
	}
	if ctx.Err() != nil {
		res.Status, res.Error, res.ScriptError, res.ModelStatus = record.StatusCancelled, "cancelled (interrupt)", false, 0
	}
	res.Ended = trunk.clock.Now()
	if !virtual {
		res.Ended = now()
	}
	if err := rec.SetModels(rctx, r.usedModels()); err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	if err := rec.Finish(rctx, res.Status, res.Error, res.Ended); err != nil {
		return nil, fmt.Errorf("record run: %w", err)
	}
	if cfg.Observer != nil {
		cfg.Observer.Finish(rctx, res.Status, res.Error, res.Ended)
	}
	res.Nodes, res.LLMCalls, res.FirstLLM = int(r.nodes.Load()), int(r.llmCalls.Load()), r.firstLLM.Load()
	return res, nil
}

// lockedWriter serialises progress lines from concurrent branches.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format, args...)
}
