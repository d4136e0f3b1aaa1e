package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/internal/termtable"
	"github.com/inspect-dev/inspect/internal/when"
	"github.com/inspect-dev/inspect/store"
)

// writeStore opens the --db database for a command that changes runs,
// which must exist (opening would create an empty one).
func writeStore(ctx context.Context, f *Factory) (*store.DB, error) {
	return existingStore(ctx, f, true)
}

// existingStore opens the --db database, which must exist: for writing
// when write is set, else read-only.
func existingStore(ctx context.Context, f *Factory, write bool) (*store.DB, error) {
	if err := dbExists(f.DBPath); err != nil {
		return nil, err
	}
	if write {
		return f.Store(ctx)
	}
	return f.ReadStore(ctx, f.DBPath)
}

// TagOptions are the inputs of `inspect tag`.
type TagOptions struct {
	F      *Factory
	Run    string
	Set    []string // key=value
	Delete []string // keys
}

// NewCmdTag builds `inspect tag`. runF replaces the action in tests.
func NewCmdTag(f *Factory, runF func(*TagOptions) error) *cobra.Command {
	opts := &TagOptions{F: f}
	cmd := &cobra.Command{
		Use:   "tag RUN [KEY=VALUE...]",
		Short: "Put tags on a run (or list them), to find it again with inspect runs --tag",
		Long: `Set tags on run RUN: KEY=VALUE pairs, a key given again takes the new
value; --delete KEY removes one. With no pair and no --delete, list the run's
tags. A key is letters, digits and . _ - / : (at most 64); a value at most
256 characters. inspect runs --tag KEY=VALUE (or --tag KEY) lists the runs
that carry it, and inspect runs --json prints each run's tags.

Exit codes: 0 done; 2 an unknown run or a bad tag.`,
		Example: `  inspect tag latest pr=482 branch=fix-fanout
  inspect tag 7f3a baseline=yes
  inspect tag 7f3a --delete baseline
  inspect runs --tag pr=482`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: runArgsCompletion(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Run, opts.Set = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return tagRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Delete, "delete", nil, "remove the tag `KEY` (repeatable)")
	return cmd
}

func tagRun(ctx context.Context, opts *TagOptions) error {
	set := map[string]string{}
	for _, kv := range opts.Set {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Usagef("%q is not KEY=VALUE; a tag is a key and a value (pr=482)", kv)
		}
		if err := store.CheckTag(k, v); err != nil {
			return &UsageError{Err: err}
		}
		set[k] = v
	}
	db, err := existingStore(ctx, opts.F, len(set) > 0 || len(opts.Delete) > 0)
	if err != nil {
		return err
	}
	id, err := db.ResolveRun(ctx, opts.Run)
	if err != nil {
		return &inDBError{Path: opts.F.DBPath, Err: err}
	}
	if len(set) > 0 || len(opts.Delete) > 0 {
		if err := db.SetTags(ctx, id, set, opts.Delete); err != nil {
			return err
		}
	}
	tags, err := db.Tags(ctx, id)
	if err != nil {
		return err
	}
	if len(tags) == 0 {
		fmt.Fprintf(opts.F.IO.Out, "run %s has no tags\n", id)
		return nil
	}
	fmt.Fprintf(opts.F.IO.Out, "run %s: %s\n", id, formatTags(tags))
	return nil
}

// formatTags is "branch=main pr=482", keys sorted.
func formatTags(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tags[k]
	}
	return strings.Join(parts, " ")
}

// RmOptions are the inputs of `inspect rm`.
type RmOptions struct {
	F    *Factory
	Runs []string
}

// NewCmdRm builds `inspect rm`. runF replaces the action in tests.
func NewCmdRm(f *Factory, runF func(*RmOptions) error) *cobra.Command {
	opts := &RmOptions{F: f}
	cmd := &cobra.Command{
		Use:   "rm RUN...",
		Short: "Remove runs from the database",
		Long: `Remove each RUN (an id, a unique prefix or latest) with its nodes, requests,
project snapshot, asks and tags, and the stored messages and files no other
run shares, in one transaction: the other runs read exactly as before. A run
still being recorded is refused. The file keeps its size until inspect
prune --vacuum compacts it; new runs reuse the space.

Exit codes: 0 removed; 2 an unknown run, or a run still running.`,
		Example: `  inspect rm 7f3a
  inspect rm 7f3a 9c01 --db ci.db`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: runArgsCompletion(f, 99),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Runs = args
			if runF != nil {
				return runF(opts)
			}
			return rmRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func rmRun(ctx context.Context, opts *RmOptions) error {
	db, err := writeStore(ctx, opts.F)
	if err != nil {
		return err
	}
	var ids []string
	seen := map[string]bool{}
	for _, ref := range opts.Runs {
		id, err := db.ResolveRun(ctx, ref)
		if err != nil {
			return &inDBError{Path: opts.F.DBPath, Err: err}
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	rm, err := db.DeleteRuns(ctx, ids)
	var live *store.LiveRunError
	if errors.As(err, &live) {
		return &UsageError{Err: fmt.Errorf("%w; nothing was removed", err)}
	}
	if err != nil {
		return err
	}
	for _, id := range ids {
		fmt.Fprintf(opts.F.IO.Out, "removed run %s\n", id)
	}
	fmt.Fprintf(opts.F.IO.ErrOut, "%s: %d %s, %d nodes, %d stored messages and %d blobs no other run used\n",
		opts.F.DBPath, rm.Runs, plural(rm.Runs, "run", "runs"), rm.Nodes, rm.Links, rm.Blobs)
	return nil
}

// PruneOptions are the inputs of `inspect prune`.
type PruneOptions struct {
	F         *Factory
	Keep      int
	OlderThan string
	DryRun    bool
	Vacuum    bool
	// Now is the time --older-than counts back from (injected for tests).
	Now func() time.Time
}

// NewCmdPrune builds `inspect prune`. runF replaces the action in tests.
func NewCmdPrune(f *Factory, runF func(*PruneOptions) error) *cobra.Command {
	opts := &PruneOptions{F: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "prune (--keep N | --older-than DUR)",
		Short: "Remove old runs: all but the newest N, or those older than a duration",
		Long: `Remove the runs beyond the newest N (--keep N), or those started longer ago
than DUR (--older-than 30d; units s, m, h, d, w), as inspect rm does: the
file stays sound and the runs kept read exactly as before. A run still being
recorded is never removed. --dry-run lists what would go and removes
nothing; --vacuum then rebuilds the file so it shrinks.

Exit codes: 0 done; 2 bad flags.`,
		Example: `  inspect prune --keep 50 --dry-run
  inspect prune --older-than 30d --vacuum
  inspect prune --keep 1 --db ci.db`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			keep := cmd.Flags().Changed("keep")
			if keep == (opts.OlderThan != "") {
				return Usagef("give --keep N or --older-than DUR (one of the two)")
			}
			if keep && opts.Keep < 1 {
				return Usagef("--keep %d: keep at least 1 run (inspect rm removes runs by name)", opts.Keep)
			}
			if runF != nil {
				return runF(opts)
			}
			return pruneRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Keep, "keep", 0, "keep the newest `N` runs, remove the rest")
	cmd.Flags().StringVar(&opts.OlderThan, "older-than", "", "remove the runs started more than `DUR` ago (36h, 30d, 2w)")
	cmd.Flags().BoolVar(&opts.DryRun, "dry-run", false, "list the runs that would be removed; remove nothing")
	cmd.Flags().BoolVar(&opts.Vacuum, "vacuum", false, "rebuild the file afterwards so it shrinks")
	return cmd
}

func pruneRun(ctx context.Context, opts *PruneOptions) error {
	p := store.Prune{Keep: opts.Keep, Now: opts.Now()}
	if opts.OlderThan != "" {
		d, err := when.ParseAge(opts.OlderThan)
		if err != nil || d == 0 {
			return Usagef("--older-than %s: give a duration above zero such as 36h, 30d or 2w", opts.OlderThan)
		}
		p.OlderThan = d
	}
	db, err := existingStore(ctx, opts.F, !opts.DryRun)
	if err != nil {
		return err
	}
	remove, running, err := db.PrunePlan(ctx, p)
	if err != nil {
		return err
	}
	out := opts.F.IO.Out
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	for _, r := range remove {
		task := ""
		if len(r.Tasks) > 0 {
			task = " · " + termtable.Truncate(r.Tasks[0], 50)
		}
		fmt.Fprintf(out, "%s run %s · %s · %s%s\n", verb, r.ID, r.Started.Local().Format("2006-01-02 15:04"), r.Status, task)
	}
	for _, r := range running {
		fmt.Fprintf(opts.F.IO.ErrOut, "left run %s alone: it is still running\n", r.ID)
	}
	if opts.DryRun {
		fmt.Fprintf(opts.F.IO.ErrOut, "%d %s would be removed; nothing was (--dry-run)\n", len(remove), plural(len(remove), "run", "runs"))
		return nil
	}
	ids := make([]string, len(remove))
	for i, r := range remove {
		ids[i] = r.ID
	}
	rm, err := db.DeleteRuns(ctx, ids)
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.F.IO.ErrOut, "%s: %d %s, %d nodes, %d stored messages and %d blobs no other run used\n",
		opts.F.DBPath, rm.Runs, plural(rm.Runs, "run", "runs"), rm.Nodes, rm.Links, rm.Blobs)
	if opts.Vacuum {
		if err := db.Vacuum(ctx); err != nil {
			return fmt.Errorf("the runs were removed, but the file could not be compacted: %w; try again when nothing is recording", err)
		}
		fmt.Fprintf(opts.F.IO.ErrOut, "%s compacted\n", opts.F.DBPath)
	}
	return nil
}
