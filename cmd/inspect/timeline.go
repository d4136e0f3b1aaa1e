package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/mermaid"
	"github.com/inspect-dev/inspect/timeline"
)

// TimelineOptions are the inputs of `inspect timeline`.
type TimelineOptions struct {
	F      *Factory
	RunRef string // [FILE.db:]RUN; "latest" by default
	Width  int    // --width; 0 = the terminal's (80 when piped)
}

// NewCmdTimeline builds `inspect timeline`. runF replaces the action in tests.
func NewCmdTimeline(f *Factory, runF func(*TimelineOptions) error) *cobra.Command {
	opts := &TimelineOptions{F: f}
	cmd := &cobra.Command{
		Use:   "timeline [RUN]",
		Short: "Draw a run in time: one row per conversation, the critical path marked",
		Long: `Draw a recorded run (default: the latest) as a timeline for a terminal:
one row per conversation — the trunk, then each fork's branches side by side
under it, indented by depth — with its model calls and tools as bars in time,
the waits on its forks, and markers for forks, joins and hand-offs. The rows
the run's end waited on (the critical path: the trunk and each fork's slowest
branch) are marked *, and each fork's slowest branch says so.

The width is the terminal's (80 columns when piped; --width sets it);
colour only on a terminal without NO_COLOR. A large run collapses as its
graph does: repeated calls, summarized branches, wide forks and the middle
of a very long conversation as one bar each.`,
		Example: `  inspect timeline
  inspect timeline 7f3a --width 120
  inspect timeline base.db:latest > timeline.txt`,
		Args:              rangeArgs(0, 1),
		ValidArgsFunction: runArgsCompletion(f, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.RunRef = runArg(args)
			if runF != nil {
				return runF(opts)
			}
			return timelineRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Width, "width", 0, "line width in `COLUMNS` (default: the terminal's, 80 when piped)")
	return cmd
}

func timelineRun(ctx context.Context, opts *TimelineOptions) error {
	if opts.Width != 0 && (opts.Width < timeline.MinWidth || opts.Width > 1000) {
		return Usagef("--width %d: the timeline needs %d to 1000 columns (the lane names, the time axis and the durations)", opts.Width, timeline.MinWidth)
	}
	run, err := analyzer(opts.F, nil).Open(ctx, opts.RunRef, analysis.LoadGraph)
	if err != nil {
		return refError(err)
	}
	g := run.Graph
	io := opts.F.IO
	width := opts.Width
	if width == 0 {
		width = io.Width
	}
	t := timeline.Build((&mermaid.Config{}).Chart(g))
	if io.Styled() {
		// colour codes are ours; Fprint sanitizes every name it writes
		return timeline.Fprint(io.Raw, t, timeline.Options{Width: width, Color: true})
	}
	return timeline.Fprint(io.Out, t, timeline.Options{Width: width})
}
