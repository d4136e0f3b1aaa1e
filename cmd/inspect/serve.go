package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis/storesrc"
	"github.com/inspect-dev/inspect/store"
	"github.com/inspect-dev/inspect/web"
)

// ServeOptions are the inputs of `inspect serve`.
type ServeOptions struct {
	F      *Factory
	Listen string // --listen host:port
	// OTLP mounts the OTLP/HTTP receiver on /v1/traces (--otlp): traces
	// posted there are recorded as runs, so serve writes the database.
	OTLP bool
	// Mounts are extra handlers on the server (serve's own flags add
	// them: --otlp mounts the OTLP receiver).
	Mounts []web.Mount
	// Ready, when set, is called with the URL once the server listens
	// (tests use it instead of reading stderr).
	Ready func(url string)
}

// NewCmdServe builds `inspect serve`. runF replaces the action in tests.
func NewCmdServe(f *Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{F: f}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Browse the runs in a local web UI: graph, timeline, findings, nodes",
		Long: `Serve a local web UI over the runs database, read-only, on loopback
(127.0.0.1:7777) unless --listen says otherwise. Its pages: the runs (filter by
status, source, agent or text; updated while a run records), a run (its graph
with pan and zoom, a timeline of the conversations with the critical path
marked, the findings — select one to mark its nodes —, grades and cache
figures), one node in full (the request folded by system prompt, tools and
messages, the response, usage, asks), and a comparison of two runs.

Everything the pages need is inside inspect: no network, no account. The
database is opened read-only: serve never writes it, and a run another
process records shows up as it records. Ctrl-C stops the server.

With --otlp it also receives OpenTelemetry traces, as inspect collect does:
POST /v1/traces on the same address (OTLP/HTTP, protobuf or JSON, gzip or
not) records each trace as a run while its spans arrive, and the pages show
it live. Point an exporter at it with
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:7777. Only then does serve
write the database (creating it when missing); the pages still only read.`,
		Example: `  inspect serve
  inspect serve --db ci/runs.db --listen 127.0.0.1:8080
  inspect serve --otlp                  # and receive traces: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:7777
  inspect serve --listen 0.0.0.0:7777   # reachable from other machines: no login, anyone who can reach it reads the runs`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:7777", "the `HOST:PORT` to listen on (port 0 picks a free one)")
	cmd.Flags().BoolVar(&opts.OTLP, "otlp", false, "also receive OTLP/HTTP traces on /v1/traces and record each as a run (writes the database)")
	return cmd
}

// loopbackHosts are the Host names a server on loopback answers.
var loopbackHosts = []string{"127.0.0.1", "localhost", "::1"}

func serveRun(ctx context.Context, opts *ServeOptions) error {
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return Usagef("--listen %q is not HOST:PORT (e.g. 127.0.0.1:7777): %v", opts.Listen, err)
	}
	path := opts.F.DBPath
	var writer *store.DB
	if opts.OTLP { // the receiver writes (and creates) the database; the pages read it beside
		if writer, err = opts.F.Store(ctx); err != nil {
			return err
		}
	}
	src, _, err := analyzer(opts.F, nil).Database(ctx, "")
	var missing *missingDBError
	var open func(context.Context) (web.Source, error)
	if errors.As(err, &missing) {
		// No database yet: serve an empty one, whose page says how to
		// record or import a first run, and read the file once it exists.
		empty, eerr := store.OpenEmpty(ctx, path)
		if eerr != nil {
			return eerr
		}
		defer empty.Close()
		src, err = storesrc.New(empty), nil
		open = func(ctx context.Context) (web.Source, error) {
			if err := dbExists(path); err != nil {
				return nil, err
			}
			s, _, err := analyzer(opts.F, nil).Database(ctx, "")
			return s, err
		}
	}
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	p, err := policy(opts.F, nil)
	if err != nil {
		return err
	}
	wo := web.Options{Mounts: opts.Mounts, Log: log.New(opts.F.IO.ErrOut, "inspect serve: ", 0), Policy: p, Open: open,
		DBFlag: dbFlag(path)}
	if loopback {
		wo.Hosts = loopbackHosts
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return Usagef("cannot listen on %s (%v); pick another port with --listen 127.0.0.1:PORT", opts.Listen, unwrapOp(err))
	}
	addr := ln.Addr().(*net.TCPAddr)
	shown := host
	if ip != nil && ip.IsUnspecified() || host == "" {
		shown = "127.0.0.1"
	}
	url := fmt.Sprintf("http://%s/", net.JoinHostPort(shown, fmt.Sprint(addr.Port)))
	var rec *otlpReceiver
	mode := "read-only"
	if writer != nil {
		rec = startOTLP(ctx, opts.F.IO, writer, url+"v1/traces", nil)
		wo.Mounts = append(wo.Mounts, web.Mount{Pattern: "/v1/traces", Handler: rec.Handler})
		mode = "recording the OTLP traces posted to " + url + "v1/traces"
	}
	pages := web.New(src, wo)
	go pages.Warm(ctx)
	srv := &http.Server{Handler: pages, ReadHeaderTimeout: 10 * time.Second}
	errOut := opts.F.IO.ErrOut
	fmt.Fprintf(errOut, "serving the runs of %s, %s, at %s\n", path, mode, url)
	if open != nil {
		fmt.Fprintf(errOut, "%s does not exist yet: the page says how to record or import a first run, and shows it once %s is written\n", path, path)
	}
	if !loopback {
		what := "read every run"
		if rec != nil {
			what = "read every run and record traces into " + path
		}
		fmt.Fprintf(errOut, "warning: %s is not loopback: anyone who can reach this machine on port %d can %s (no login); --listen 127.0.0.1:%d keeps it local\n", host, addr.Port, what, addr.Port)
	}
	fmt.Fprintln(errOut, "open it in a browser; Ctrl-C stops")
	if opts.Ready != nil {
		opts.Ready(url)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if rec != nil {
			rec.Close()
		}
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if rec != nil {
			fmt.Fprintf(errOut, "stopped: %d traces recorded\n", rec.Close())
			return nil
		}
		fmt.Fprintln(errOut, "stopped")
		return nil
	}
}

// unwrapOp is a net.OpError's cause ("address already in use").
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return errors.New(strings.TrimPrefix(op.Err.Error(), "bind: "))
	}
	return err
}

// dbFlag is " --db PATH" as a hint adds it for path (dbArgs), quoted for a
// shell, without the leading space; "" for the default database.
func dbFlag(path string) string {
	var q []string
	for _, a := range dbArgs(path) {
		q = append(q, shellQuote(a))
	}
	return strings.Join(q, " ")
}
