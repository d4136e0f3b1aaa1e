package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/importers/jaeger"
	"github.com/inspect-dev/inspect/internal/termsafe"
	"github.com/inspect-dev/inspect/internal/when"
)

// FromOptions are the flags of `inspect import --from BACKEND URL`.
type FromOptions struct {
	Backend      string // --from: jaeger
	Service      string
	Operation    string
	Attrs        []string // KEY=VALUE
	Since, Until string
	Limit        int
	Depth        int           // --search-depth
	MaxBytes     int64         // --max-trace-bytes
	Timeout      time.Duration // --timeout: one request
	Retries      int           // --retries
	// Now is the time ages count back from (injected for tests).
	Now func() time.Time
	// Sleep replaces the retries' waits (tests).
	Sleep func(context.Context, time.Duration) error
}

func addFromFlags(cmd *cobra.Command, opts *ImportOptions) {
	fl := cmd.Flags()
	fl.StringVar(&opts.From.Backend, "from", "", "import from a trace backend: `BACKEND` (jaeger) at the URL given")
	fl.StringVar(&opts.From.Service, "service", "", "--from: the traces of service `NAME` (required by Jaeger)")
	fl.StringVar(&opts.From.Operation, "operation", "", "--from: only traces with a span of operation `NAME`")
	fl.StringArrayVar(&opts.From.Attrs, "attr", nil, "--from: only traces with a span attribute `KEY=VALUE`; repeatable")
	fl.StringVar(&opts.From.Since, "since", "", "--from: traces started at or after `WHEN` (2025-05-01, an RFC 3339 time, or an age: 7d); default: where the last import stopped, else 24h")
	fl.StringVar(&opts.From.Until, "until", "", "--from: traces started before `WHEN`; default now")
	fl.IntVar(&opts.From.Limit, "limit", 0, "--from: import at most `N` traces (0 = all); the next import goes on from there")
	fl.IntVar(&opts.From.Depth, "search-depth", jaeger.DefaultDepth, "--from: how many traces one search asks for (`N`); a window holding more is split")
	fl.Int64Var(&opts.From.MaxBytes, "max-trace-bytes", jaeger.DefaultMaxBytes, "--from: skip a trace whose OTLP JSON is over `BYTES` (its id is listed)")
	fl.DurationVar(&opts.From.Timeout, "timeout", jaeger.DefaultTimeout, "--from: give each request to the backend at most `DURATION` (a search, or fetching one trace)")
	fl.IntVar(&opts.From.Retries, "retries", 5, "--from: try a request that failed (no answer, 429, 5xx) again up to `N` times, waiting 0.5s, 1s, 2s, … (Retry-After when given)")
}

// checkFrom checks the flags of --from before anything is fetched.
func checkFrom(opts *ImportOptions) error {
	o := &opts.From
	if o.Backend != "jaeger" {
		return Usagef("--from %q: the backend inspect imports from is jaeger (inspect import --from jaeger URL --service NAME)", o.Backend)
	}
	if len(opts.Paths) != 1 {
		return Usagef("--from jaeger takes the address of Jaeger's query service: inspect import --from jaeger http://localhost:16686 --service NAME")
	}
	u, err := url.Parse(opts.Paths[0])
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Usagef("--from jaeger %s: give the query service's http(s) address, such as http://localhost:16686", redactURL(opts.Paths[0]))
	}
	if u.User != nil {
		return Usagef("--from jaeger: give no credentials in the address; set INSPECT_JAEGER_TOKEN, or INSPECT_JAEGER_USER and INSPECT_JAEGER_PASSWORD")
	}
	if o.Service == "" {
		return Usagef("--from jaeger needs --service NAME: Jaeger searches one service's traces (its UI lists them)")
	}
	if opts.Format != "" || opts.Watch || opts.Strict {
		return Usagef("--from jaeger reads OTLP from Jaeger: --format, --watch and --strict do not apply")
	}
	if o.Limit < 0 || o.Depth <= 0 || o.MaxBytes <= 0 || o.Retries < 0 || o.Timeout <= 0 {
		return Usagef("--limit and --retries must be 0 or more; --search-depth, --max-trace-bytes and --timeout more than 0")
	}
	for _, kv := range o.Attrs {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return Usagef("--attr %q: give KEY=VALUE", kv)
		}
	}
	return nil
}

// redactURL is u without its user:password.
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil && p.User != nil {
		p.User = url.User("[redacted]")
		return p.String()
	}
	return u
}

// jaegerAuth is the credentials the environment gives for Jaeger, as a
// function adding them to a request; nil without any.
func jaegerAuth(getenv func(string) string) func(*http.Request) {
	if tok := getenv("INSPECT_JAEGER_TOKEN"); tok != "" {
		return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
	}
	if user := getenv("INSPECT_JAEGER_USER"); user != "" {
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + getenv("INSPECT_JAEGER_PASSWORD")))
		return func(r *http.Request) { r.Header.Set("Authorization", "Basic "+basic) }
	}
	return nil
}

// importFrom is `inspect import --from jaeger URL`.
func importFrom(ctx context.Context, opts *ImportOptions) error {
	o := &opts.From
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	q := jaeger.Query{Service: o.Service, Operation: o.Operation, Limit: o.Limit}
	for _, kv := range o.Attrs {
		k, v, _ := strings.Cut(kv, "=")
		if q.Attrs == nil {
			q.Attrs = map[string]string{}
		}
		q.Attrs[k] = v
	}
	for _, b := range []struct {
		flag, v string
		t       *time.Time
	}{{"--since", o.Since, &q.Since}, {"--until", o.Until, &q.Until}} {
		if b.v == "" {
			continue
		}
		t, err := when.Parse(b.v, now())
		if err != nil {
			return Usagef("%s: %v", b.flag, err)
		}
		*b.t = t
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return Usagef("--since must be before --until")
	}
	opt, err := importOptions(opts)
	if err != nil {
		return err
	}
	db, err := opts.F.Store(ctx)
	if err != nil {
		return err
	}
	policy, err := opts.F.Config()
	if err != nil {
		return err
	}
	if patterns := policy.ResearchPatterns(); patterns != nil {
		opt.Research = func(tool string) bool { return importers.MatchResearch(patterns, tool) }
	}
	errOut := opts.F.IO.ErrOut
	base := strings.TrimSuffix(opts.Paths[0], "/")
	retries := o.Retries
	if retries == 0 {
		retries = -1 // the client's 0 is its default
	}
	c := &jaeger.Client{Base: base, Auth: jaegerAuth(opts.F.Getenv), Depth: o.Depth, MaxBytes: o.MaxBytes, Sleep: o.Sleep,
		HTTP: &http.Client{Timeout: o.Timeout}, Retries: retries,
		OnRetry: func(what string, err error, wait time.Duration) {
			fmt.Fprintf(errOut, "jaeger: %s; retrying in %s\n", termsafe.String(err.Error()), wait.Round(time.Millisecond))
		}}
	im := &jaeger.Importer{Client: c, Store: db, Options: opt, Now: o.Now}
	tty := opts.F.IO.ErrTTY
	if tty {
		im.Progress = func(p jaeger.Progress) {
			fmt.Fprintf(errOut, "\r\x1b[Kjaeger: %d/%d traces · %d imported · %d skipped · at %s", p.Done, p.Found, p.Imported, p.Skipped, p.Window.UTC().Format(time.RFC3339))
		}
	}
	// Each run's line is printed as it is recorded (over the progress
	// line, which the next trace draws again): nothing is kept of it.
	im.OnRun = func(r jaeger.Run) {
		if tty {
			fmt.Fprint(errOut, "\r\x1b[K")
		}
		printResult(opts, &r.Result)
	}
	sum, err := im.Import(ctx, q)
	if tty {
		fmt.Fprint(errOut, "\r\x1b[K")
	}
	for _, id := range sum.TooLarge {
		fmt.Fprintf(errOut, "skipped trace %s: its OTLP JSON is over %d bytes (--max-trace-bytes)\n", id, o.MaxBytes)
	}
	fmt.Fprintf(errOut, "%s: %d %s found from %s to %s · %d imported (%d still running, %d completed) · %d already here · %d over the size cap · %d gone\n",
		base, sum.Found, plural(sum.Found, "trace", "traces"), sum.From.UTC().Format(time.RFC3339), sum.To.UTC().Format(time.RFC3339),
		sum.Imported, sum.Running, sum.Completed, sum.Known, len(sum.TooLarge), sum.Gone)
	if err != nil {
		return fromError(base, err, sum.Imported)
	}
	if sum.Imported > 0 {
		fmt.Fprintf(errOut, "next: %s\n", hint(opts.F.DBPath, "fleet", "--source", "otlp"))
	}
	return nil
}

// fromError is what an import from Jaeger that stopped says: what failed,
// in a sentence, that the traces imported before it stay and the same
// command resumes, and what to change; a refused credential is a usage
// error (exit 2), the rest a tool failure (exit 3).
func fromError(base string, err error, imported int) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	kept := fmt.Sprintf("the %d %s imported before it stay, and the same command again resumes from there", imported, plural(imported, "trace", "traces"))
	var se *jaeger.StatusError
	var re *jaeger.RequestError
	switch {
	case errors.As(err, &se) && (se.Code == http.StatusUnauthorized || se.Code == http.StatusForbidden):
		return Usagef("import from jaeger %s stopped: %v; %s. Set INSPECT_JAEGER_TOKEN (a bearer token), or INSPECT_JAEGER_USER and INSPECT_JAEGER_PASSWORD (basic auth), for a Jaeger behind a proxy", base, err, kept)
	case errors.As(err, &re) && re.Timeout > 0:
		return fmt.Errorf("import from jaeger %s stopped: %v; %s (--timeout gives each request longer, --retries tries it more often)", base, err, kept)
	case errors.As(err, &re):
		return fmt.Errorf("import from jaeger %s stopped: %v; %s (--retries tries a failed request more often)", base, err, kept)
	}
	return fmt.Errorf("import from jaeger %s stopped: %v; %s", base, err, kept)
}
