package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/store"
)

// MigrateOptions are the inputs of `inspect migrate`.
type MigrateOptions struct {
	F    *Factory
	Path string // the database file
}

// NewCmdMigrate builds `inspect migrate`. runF replaces the action in tests.
func NewCmdMigrate(f *Factory, runF func(*MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{F: f}
	cmd := &cobra.Command{
		Use:   "migrate FILE",
		Short: "Upgrade a runs database written by an older inspect to this version's schema",
		Long: `Upgrade the runs database FILE in place to the schema this inspect writes.

Commands that only read (graph, audit, show, diff, runs, ask --dry-run) never
change a file: they read an older one through an upgraded temporary copy and
say so. inspect run upgrades the file it records into. Migrate does it once,
so later reads need no copy. Each step runs in one transaction: a failed
step leaves the file as it was. A file written by a newer inspect, or one
holding tables, views or triggers inspect did not create, is refused.

Exit codes: 0 upgraded (or already current); 2 no such file; 3 the file
cannot be upgraded (not an inspect database, newer, damaged, read-only).`,
		Example: `  inspect migrate .inspect/runs.db
  inspect migrate baseline.db`,
		Args: rangeArgs(1, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Path = args[0]
			if runF != nil {
				return runF(opts)
			}
			return migrateRun(cmd.Context(), opts)
		},
	}
	return cmd
}

func migrateRun(ctx context.Context, opts *MigrateOptions) error {
	if err := dbExists(opts.Path); err != nil {
		return Usagef("no database file %q to migrate; give the path of an existing runs database", opts.Path)
	}
	from, to, err := store.Migrate(ctx, opts.Path)
	if err != nil {
		return err
	}
	if from == to {
		_, err = fmt.Fprintf(opts.F.IO.Out, "%s: already at schema v%d; nothing to do\n", opts.Path, to)
		return err
	}
	_, err = fmt.Fprintf(opts.F.IO.Out, "%s: upgraded from schema v%d to v%d\n", opts.Path, from, to)
	return err
}
