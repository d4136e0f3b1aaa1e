package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/cache/report"
	"github.com/inspect-dev/inspect/internal/mdterm"
	"github.com/inspect-dev/inspect/record"
)

// cacheFormats are the values of `inspect cache --format`.
var cacheFormats = []string{"text", "markdown", "json"}

// CacheOptions are the inputs of `inspect cache`.
type CacheOptions struct {
	F *Factory
	// Run is the run reference ([FILE.db:]RUN; latest by default).
	Run string
	// Node is "" for the whole run, else n<seq> of one llm node.
	Node string
	// Format is one of cacheFormats.
	Format string
	// Lifetime is the cache lifetime (--cache-lifetime).
	Lifetime time.Duration
	// MinPrefix is the provider's minimum cacheable prefix in tokens.
	MinPrefix int64
}

// nodeRefRe tells a node reference from a run reference (run ids are hex).
var nodeRefRe = regexp.MustCompile(`^[nN][0-9]+$`)

// NewCmdCache builds `inspect cache`. runF replaces the action in tests.
func NewCmdCache(f *Factory, runF func(*CacheOptions) error) *cobra.Command {
	opts := &CacheOptions{F: f}
	cmd := &cobra.Command{
		Use:   "cache [RUN] [NODE]",
		Short: "Show what the prompt cache could reuse in a run, what it did, and what broke it",
		Long: `Analyse a recorded run (default: the latest) for prompt caching. For each
model call whose request holds its tools and system prompt, the predicted
reusable prefix: the longest byte prefix (tools, then system prompt, then
messages) it shares with an earlier request to the same model that had
finished before it started, within the cache lifetime; where that prefix
broke, named by structure — tools (which tool was added, removed, changed or
moved), system (which prompt file, which line), messages[k] (which message
and why: a new agent after a hand-off, a branch's assignment, a tool call
dropped by compact context, an edited earlier message, or just the new
tail) — and beside it the cached and cache-write tokens the provider
reported, with each mismatch named (predicted reusable but reported 0: the
minimum prefix length, the cache lifetime, routing).

A prediction is never called a hit or a miss: only reported figures are
measured. Totals per conversation, agent and run give cache reads, writes,
uncached input, the hit ratio and the weighted tokens (uncached input, cache
writes and output in full, cache reads at 25%); with a price table
(prices: in .inspect.yaml) also money: what the calls cost, what the cache
saved on them, and what each kind of miss cost against cache reads.

With NODE (n<seq>), one model call's analysis in full.

Formats: text (rendered with glamour on a terminal, plain otherwise),
markdown, json (documented in docs/cache-json.md).`,
		Example: `  inspect cache                       # the latest run
  inspect cache n7                    # one call's prefix analysis
  inspect cache 7f3a --format json | jq '.calls[] | select(.mismatch)'
  inspect cache --cache-lifetime 1h   # a provider that keeps prefixes an hour`,
		Args:              rangeArgs(0, 2),
		ValidArgsFunction: runNodeCompletion(f, true),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run = "latest"
			switch {
			case len(args) == 2:
				opts.Run, opts.Node = args[0], args[1]
			case len(args) == 1 && nodeRefRe.MatchString(args[0]):
				opts.Node = args[0]
			case len(args) == 1:
				opts.Run = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return cacheRun(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output `FORMAT`: "+strings.Join(cacheFormats, ", "))
	cmd.Flags().DurationVar(&opts.Lifetime, "cache-lifetime", 5*time.Minute, "how long a finished request stays reusable (`DURATION`; default: cache-lifetime in .inspect.yaml, else 5m)")
	cmd.Flags().Int64Var(&opts.MinPrefix, "min-prefix", cache.DefaultMinPrefix, "the provider's minimum cacheable prefix in `TOKENS` (names mismatches only)")
	_ = cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions(cacheFormats, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func cacheRun(cmd *cobra.Command, opts *CacheOptions) error {
	io := opts.F.IO
	if !auditContains(cacheFormats, opts.Format) {
		return Usagef("unknown --format %q; use one of: %s", opts.Format, strings.Join(cacheFormats, ", "))
	}
	c, err := opts.F.Config()
	if err != nil {
		return err
	}
	p := lenientPolicy(opts.F)
	if d, _, ok := c.Lifetime(); !ok || cmd.Flags().Changed("cache-lifetime") { // the flag wins over .inspect.yaml
		p.Lifetime = opts.Lifetime
	} else {
		opts.Lifetime = d
	}
	if opts.Lifetime <= 0 {
		return Usagef("--cache-lifetime %s: give a positive duration such as 5m", opts.Lifetime)
	}
	if opts.MinPrefix < 1 {
		return Usagef("--min-prefix %d: give a number of tokens of at least 1", opts.MinPrefix)
	}
	p.MinPrefix = opts.MinPrefix
	var seq int64
	if opts.Node != "" {
		s, err := ParseNodeRef(opts.Node)
		if err != nil {
			return err
		}
		seq = s
	}
	ctx := cmd.Context()
	run, err := openAnalysed(ctx, opts.F, p, opts.Run, analysis.LoadCache)
	if err != nil {
		return err
	}
	if seq > 0 {
		g := run.Graph
		n := g.Node(seq)
		if n == nil {
			return refError(run.MissingNode(ctx, seq))
		}
		if n.Kind != record.KindLLM {
			var llm []string
			for _, x := range g.Nodes {
				if x.Kind == record.KindLLM && len(llm) < 8 {
					llm = append(llm, x.ID())
				}
			}
			return Usagef("%s is a %s node; inspect cache analyses model calls (llm nodes: %s)", n.ID(), n.Kind, strings.Join(llm, ", "))
		}
	}
	rep, err := run.Cache(ctx)
	if err != nil {
		return err
	}
	switch opts.Format {
	case "json":
		return report.WriteJSON(io.Data(), rep, seq)
	case "markdown":
		return report.WriteMarkdown(io.Out, rep, seq)
	}
	if style, ok := io.markdownStyle(opts.F.Getenv); ok {
		var md bytes.Buffer
		if err := report.WriteMarkdown(&md, rep, seq); err != nil {
			return err
		}
		if r, err := mdterm.New(style, io.Width); err == nil {
			if s, err := mdterm.Render(r, md.String(), io.Width); err == nil {
				_, err = fmt.Fprint(io.Raw, s) // glamour's styles; its input is sanitized
				return err
			}
		}
	}
	return report.WriteText(io.Out, rep, seq)
}

// openAnalysed opens run ref for analysis under policy p, reading what
// load says beside its graph, with the garbage collector held to its lower
// pace while the run loads (collectLess).
func openAnalysed(ctx context.Context, f *Factory, p *analysis.Policy, ref string, load analysis.Load) (*analysis.Run, error) {
	defer collectLess(f)()
	run, err := analyzer(f, p).Open(ctx, ref, load)
	return run, refError(err)
}

// graphCache opens run ref for a drawing: its graph and the brief cache
// analysis a graph's labels show (no break naming), under the policy the
// commands that only show a run read; when the analysis fails (a damaged
// request), it says so on stderr and the graph is drawn without it (a nil
// report).
func graphCache(ctx context.Context, f *Factory, ref string) (*analysis.Run, *cache.Report, error) {
	// what follows the load (the brief analysis, the drawing) allocates
	// little: collect less often to the command's end
	f.atClose(collectLess(f))
	run, err := openAnalysed(ctx, f, lenientPolicy(f), ref, analysis.LoadBrief)
	if err != nil {
		return nil, nil, err
	}
	rep, err := run.BriefCache(ctx)
	if err != nil {
		fmt.Fprintf(f.IO.ErrOut, "inspect: the prompt-cache analysis failed (%v); the graph is drawn without it\n", err)
		rep = nil
	}
	return run, rep, nil
}

// gcLoad is the garbage collector's percentage while a run loads
// (collectLess).
const gcLoad = 300

var gcHeld struct {
	sync.Mutex
	n   int // holders
	old int // the percentage before the first
}

// collectLess makes the garbage collector run a third as often until the
// returned function is called (unless GOGC is set): nearly all a run's
// load allocates stays to the end of the command, so each collection
// would mostly mark what stays. Commands run in one process (inspect mcp)
// share it: the last to release it restores it.
func collectLess(f *Factory) (release func()) {
	if f.Getenv("GOGC") != "" {
		return func() {}
	}
	gcHeld.Lock()
	if gcHeld.n == 0 {
		gcHeld.old = debug.SetGCPercent(gcLoad)
	}
	gcHeld.n++
	gcHeld.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			gcHeld.Lock()
			if gcHeld.n--; gcHeld.n == 0 {
				debug.SetGCPercent(gcHeld.old)
			}
			gcHeld.Unlock()
		})
	}
}
