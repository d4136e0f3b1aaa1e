package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/store"
)

// Factory holds what commands share: the streams and the lazily opened
// database. Tests build one with buffers and a temp database path.
type Factory struct {
	IO *IOStreams
	// DBPath is the --db flag, or INSPECT_DB, or store.DefaultPath.
	DBPath string
	// Getenv reads the environment (injected for tests).
	Getenv func(string) string
	// ConfigPath is the --config flag; "" = find .inspect.yaml from the
	// working folder up to the repository root or home (config.Find).
	ConfigPath string
	// Getwd is the working folder (injected for tests).
	Getwd func() (string, error)

	mu    sync.Mutex
	cfg   *loadedConfig
	dbs   map[string]*store.DB
	flush []*termsafe.Writer // the sanitizers on IO.Out and IO.ErrOut
	after []func()           // run by Close
}

// NewFactory returns a Factory on the given streams and environment.
func NewFactory(io *IOStreams, getenv func(string) string) *Factory {
	path := getenv("INSPECT_DB")
	if path == "" {
		path = store.DefaultPath
	}
	return &Factory{IO: io, DBPath: path, Getenv: getenv, Getwd: os.Getwd, dbs: map[string]*store.DB{}, flush: io.sanitize()}
}

// Store opens the database named by --db / INSPECT_DB for writing (once):
// the commands that record (run, demo).
func (f *Factory) Store(ctx context.Context) (*store.DB, error) {
	return f.StoreAt(ctx, f.DBPath)
}

// StoreAt opens the database at path for writing (once per path),
// creating and migrating it.
func (f *Factory) StoreAt(ctx context.Context, path string) (*store.DB, error) {
	return f.openDB(ctx, path, false)
}

// ReadStore opens the existing database at path read-only (once per
// path): every command that only reads. An older schema is read through an
// upgraded copy, with a note saying how to upgrade the file itself.
func (f *Factory) ReadStore(ctx context.Context, path string) (*store.DB, error) {
	return f.openDB(ctx, path, true)
}

func (f *Factory) openDB(ctx context.Context, path string, readOnly bool) (*store.DB, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := "rw:" + path
	if readOnly {
		key = "ro:" + path
	}
	if db, ok := f.dbs[key]; ok {
		return db, nil
	}
	open := store.Open
	if readOnly {
		open = store.OpenReadOnly
	}
	db, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	if readOnly && !db.Empty && db.FileVersion < store.SchemaVersion() {
		fmt.Fprintf(f.IO.ErrOut, "note: %s has schema v%d (this inspect writes v%d); it was read through an upgraded temporary copy and left unchanged; `inspect migrate %s` upgrades it in place\n",
			path, db.FileVersion, store.SchemaVersion(), shellQuote(path))
	}
	f.dbs[key] = db
	return db, nil
}

// Close closes every database the factory opened.
func (f *Factory) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, db := range f.dbs {
		errs = append(errs, db.Close())
	}
	f.dbs = map[string]*store.DB{}
	for _, w := range f.flush {
		errs = append(errs, w.Flush())
	}
	for _, fn := range f.after {
		fn()
	}
	f.after = nil
	return errors.Join(errs...)
}

// atClose has Close call fn.
func (f *Factory) atClose(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after = append(f.after, fn)
}

// NewCmdRoot builds the inspect command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "inspect",
		Short: "Record, draw, audit and question multi-agent LLM runs",
		Long: `inspect records multi-agent LLM runs (hand-offs and forks included) in a
SQLite file, draws them as Mermaid, audits their topology for mistakes with
what each one cost and where its fix goes, lets you question any recorded
model call, and compares runs for CI.

Runs are kept in .inspect/runs.db unless --db or INSPECT_DB says otherwise.
A run reference is "latest" (the default), a run id, or a unique prefix of one;
a node reference is n<seq> as the graph shows it.`,
		Example: `  inspect demo                      # a built-in project: run, graph, audit
  inspect run ./myproject --task "Compare Q3 revenue across EU, US and APAC"
  inspect graph                     # Mermaid of the latest run
  inspect audit                     # findings, prices, fixes, grades
  inspect runs --json`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
	}
	root.SetVersionTemplate("inspect {{.Version}}\n")
	root.PersistentFlags().StringVar(&f.DBPath, "db", f.DBPath, "runs database `FILE` (env INSPECT_DB)")
	root.PersistentFlags().StringVar(&f.ConfigPath, "config", "", "policy `FILE` (default: the nearest .inspect.yaml from the working folder up to the repository root or home)")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &flagError{err: err}
	})
	for _, add := range commands {
		root.AddCommand(add(f))
	}
	// mcp runs the other commands, this tree included: it cannot be in
	// commands (an initialisation cycle).
	root.AddCommand(NewCmdMCP(f, nil))
	withDefaultCommandExamples(root)
	return root
}

// commands lists every subcommand constructor; each command file adds its
// own entry here.
var commands = []func(*Factory) *cobra.Command{
	func(f *Factory) *cobra.Command { return NewCmdRuns(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdGraph(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdShow(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdRun(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdInit(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdDemo(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdAudit(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdFleet(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdCache(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdAsk(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdDiff(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdMigrate(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdExport(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdCollect(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdImport(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdTag(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdRm(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdPrune(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdTimeline(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdServe(f, nil) },
	func(f *Factory) *cobra.Command { return NewCmdReport(f, nil) },
}

// Main runs inspect with args and returns the exit code.
func Main(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if dir, err := os.Getwd(); err == nil {
		info, _ := debug.ReadBuildInfo()
		if c := goRunCommand(os.Args[0], dir, info); c != "" {
			selfCommand = c
		}
	}
	return run(ctx, NewFactory(SystemStreams(in, out, errOut, os.Getenv), os.Getenv), args)
}

func run(ctx context.Context, f *Factory, args []string) int {
	defer f.Close()
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var threshold *ThresholdError
	if errors.As(err, &threshold) {
		fmt.Fprintf(f.IO.ErrOut, "inspect: %s\n", threshold.Reason)
		return ExitFindings
	}
	fmt.Fprintf(f.IO.ErrOut, "inspect: %s\n", explain(err))
	var fe *flagError
	if strings.HasPrefix(err.Error(), "unknown command") {
		err = &flagError{err: err}
	}
	if errors.As(err, &fe) && cmd != nil {
		// the error and where the usage is, not the whole usage
		fmt.Fprintf(f.IO.ErrOut, "try: %s --help\n", cmd.CommandPath())
	}
	return exitCode(err)
}

// version is what `inspect --version` says of this build (versionOf).
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return versionOf(info)
}

// versionOf is the module version inspect was built as (a tagged `go
// install …@v1.2.3`, or the pseudo-version Go stamps from git), with the
// commit, its time and whether the tree was modified when the build
// recorded them, then the Go version. A build that recorded neither (`go
// run`, -buildvcs=false) is "devel" and says how to get a stamped one.
func versionOf(info *debug.BuildInfo) string {
	const unstamped = "devel (no version recorded: this build had no version control information, as with go run or -buildvcs=false; `go build -buildvcs=true ./cmd/inspect` in a git checkout, or `go install " + mainPackage + "@latest`, stamps one)"
	if info == nil {
		return unstamped
	}
	v := info.Main.Version
	if v == "(devel)" {
		v = ""
	}
	var rev, at string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if v == "" && rev == "" {
		return unstamped + " " + info.GoVersion
	}
	if v == "" {
		v = "devel"
	}
	var about []string
	if rev != "" && !strings.Contains(v, rev) {
		about = append(about, "commit "+rev)
	}
	if at != "" && rev != "" {
		about = append(about, at)
	}
	if modified && !strings.HasSuffix(v, "+dirty") {
		about = append(about, "modified")
	}
	if len(about) > 0 {
		v += " (" + strings.Join(about, ", ") + ")"
	}
	return v + " " + info.GoVersion
}
