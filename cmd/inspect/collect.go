package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/otlp"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/otel"
	"github.com/inspect-dev/inspect/store"
)

// CollectOptions are the inputs of `inspect collect`.
type CollectOptions struct {
	F      *Factory
	Listen string // host:port
	// Ready, when set, is told the address served once listening (tests).
	Ready func(addr string)
	// Tune, when set, changes the receiver's bounds before it starts (tests).
	Tune func(*otlp.Live)
}

// NewCmdCollect builds `inspect collect`. runF replaces the action in tests.
func NewCmdCollect(f *Factory, runF func(*CollectOptions) error) *cobra.Command {
	opts := &CollectOptions{F: f}
	cmd := &cobra.Command{
		Use:   "collect",
		Short: "Receive OpenTelemetry traces (OTLP/HTTP) and record each as a run as it arrives",
		Long: `Listen for OTLP/HTTP trace exports (POST /v1/traces, protobuf or JSON,
optionally gzip) from any OpenTelemetry exporter — LangGraph with
OpenInference, the Vercel AI SDK, the OpenAI Agents SDK, a Collector — and
record each trace as a run while its spans arrive, rewriting the run as the
trace grows. A line is printed when a run is first recorded and when its
trace ends. Point an exporter at it with
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 (docs/otel.md).

A body that is not OTLP is answered 400 with the reason, and collecting
goes on. Ctrl-C writes what is left and exits 0.

Exit codes: 0 stopped with Ctrl-C; 2 the address cannot be listened on;
3 the database is unusable.`,
		Example: `  inspect collect
  inspect collect --listen 127.0.0.1:4318 --db traces.db`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return collectRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "127.0.0.1:4318", "listen on `HOST:PORT`")
	return cmd
}

func collectRun(ctx context.Context, opts *CollectOptions) error {
	ios := opts.F.IO
	db, err := opts.F.Store(ctx)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return Usagef("cannot listen on %s: %v; give a free --listen HOST:PORT", opts.Listen, err)
	}
	url := "http://" + ln.Addr().String() + "/v1/traces"
	rec := startOTLP(ctx, ios, db, url, opts.Tune)
	host, _, _ := net.SplitHostPort(opts.Listen)
	if host == "localhost" || net.ParseIP(host).IsLoopback() {
		// as serve does: a page that rebinds a DNS name to 127.0.0.1 cannot post
		rec.Handler.Hosts = loopbackHosts
	} else {
		fmt.Fprintf(ios.ErrOut, "warning: %s is not loopback: anyone who can reach this machine can record traces into %s (no login); --listen 127.0.0.1:4318 keeps it local\n", host, opts.F.DBPath)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/traces", rec.Handler)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	fmt.Fprintf(ios.ErrOut, "listening on %s (OTLP/HTTP, protobuf or JSON); recording into %s; Ctrl-C to stop\n", url, opts.F.DBPath)
	if opts.Ready != nil {
		opts.Ready(ln.Addr().String())
	}
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	srv.Shutdown(sctx)
	cancel()
	fmt.Fprintf(ios.ErrOut, "stopped: %d traces recorded\n", rec.Close())
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// otlpReceiver records the OTLP traces an HTTP handler receives into a
// store, each trace a run rewritten as its spans arrive (inspect collect,
// inspect serve --otlp).
type otlpReceiver struct {
	// Handler serves POST /v1/traces.
	Handler *otel.Handler
	live    *otlp.Live
	stop    context.CancelFunc
	done    chan struct{}
}

// startOTLP starts recording into db what Handler receives; url names the
// endpoint in the runs' source; tune, when set, changes the receiver's
// bounds. A line goes to stderr when a run is first recorded and when its
// trace ends.
func startOTLP(ctx context.Context, ios *IOStreams, db *store.DB, url string, tune func(*otlp.Live)) *otlpReceiver {
	live := &otlp.Live{
		Source: url,
		Spans:  db,
		Write:  func(ctx context.Context, s *importers.Session) (string, error) { return importers.Write(ctx, db, s) },
		OnRun: func(id string, s *importers.Session, spans int, ended bool) {
			state := "recording"
			if ended {
				state = "ended"
			}
			fmt.Fprintf(ios.ErrOut, "run %s · trace %s · %s · %d spans · %s\n", id, s.Source.ID, agentsOf(s), spans, state)
		},
		OnError: func(trace string, err error) {
			fmt.Fprintf(ios.ErrOut, "warning: trace %s not recorded yet: %v (trying again)\n", trace, err)
		},
	}
	if tune != nil {
		tune(live)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &otlpReceiver{Handler: &otel.Handler{Consume: live.Consume}, live: live, stop: stop, done: make(chan struct{})}
	go func() { live.Run(runCtx); close(r.done) }()
	return r
}

// Close writes what is left and returns how many traces were recorded.
// Stop the HTTP server first: nothing may arrive after.
func (r *otlpReceiver) Close() int {
	r.stop()
	<-r.done
	open, closed, _ := r.live.Stats()
	return open + closed
}

// agentsOf names a session's agents, in the order they appear.
func agentsOf(s *importers.Session) string {
	var names []string
	seen := map[string]bool{}
	var walk func(c *importers.Conversation)
	walk = func(c *importers.Conversation) {
		if c == nil {
			return
		}
		add := func(a string) {
			if a != "" && !seen[a] {
				seen[a] = true
				names = append(names, termsafe.String(a))
			}
		}
		add(c.Agent)
		for _, st := range c.Steps {
			if st.Handoff != nil {
				add(st.Handoff.To)
			}
			if st.Fork != nil {
				for _, b := range st.Fork.Branches {
					walk(b.Conv)
				}
			}
		}
	}
	walk(s.Trunk)
	if len(names) == 0 {
		return "no agents yet"
	}
	return "agents " + strings.Join(names, ", ")
}
