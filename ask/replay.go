package ask

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/inspect-dev/inspect/chat"
)

// DefaultParallel bounds how many replay samples are in flight at once.
const DefaultParallel = 4

// Sample is the outcome of one replayed request: a reply or an error.
type Sample struct {
	Reply *chat.Response
	Err   error
}

// Replay sends body unchanged n times, at most parallel at once
// (DefaultParallel when parallel < 1), and returns the samples in the
// order they were started. A failed sample is a row, not a failed replay;
// Replay returns an error only when ctx ends.
func Replay(ctx context.Context, c *Client, body []byte, n, parallel int) ([]Sample, error) {
	if parallel < 1 {
		parallel = DefaultParallel
	}
	out := make([]Sample, n)
	var g errgroup.Group
	g.SetLimit(parallel)
	for i := range n {
		g.Go(func() error {
			if ctx.Err() != nil {
				out[i].Err = ctx.Err()
				return nil
			}
			out[i].Reply, out[i].Err = c.Send(ctx, body, nil)
			return nil
		})
	}
	_ = g.Wait()
	if err := ctx.Err(); err != nil {
		return out, err
	}
	return out, nil
}

// Tally is one choice and how many samples made it.
type Tally struct {
	Choice string // see ChoiceOf
	Count  int
}

// Distribution is what a replay's samples chose, against the recording.
type Distribution struct {
	// Recorded is the recorded call's choice.
	Recorded string
	// Samples is the number of samples sent.
	Samples int
	// Choices are the choices made, most frequent first (ties: first made first).
	Choices []Tally
	// Failed counts samples that got no reply; Errors holds their distinct errors.
	Failed int
	Errors []error
}

// TallySamples counts the choices of samples against the recorded choice.
func TallySamples(recorded string, samples []Sample) Distribution {
	d := Distribution{Recorded: recorded, Samples: len(samples)}
	idx := map[string]int{}
	seen := map[string]bool{}
	for _, s := range samples {
		if s.Err != nil || s.Reply == nil {
			d.Failed++
			if s.Err != nil && !seen[s.Err.Error()] {
				seen[s.Err.Error()] = true
				d.Errors = append(d.Errors, s.Err)
			}
			continue
		}
		c := Choice(s.Reply)
		if i, ok := idx[c]; ok {
			d.Choices[i].Count++
			continue
		}
		idx[c] = len(d.Choices)
		d.Choices = append(d.Choices, Tally{Choice: c, Count: 1})
	}
	// Stable insertion sort by count, descending: few distinct choices.
	for i := 1; i < len(d.Choices); i++ {
		for j := i; j > 0 && d.Choices[j].Count > d.Choices[j-1].Count; j-- {
			d.Choices[j], d.Choices[j-1] = d.Choices[j-1], d.Choices[j]
		}
	}
	return d
}

// Matches is how many samples made the recorded choice.
func (d Distribution) Matches() int {
	for _, t := range d.Choices {
		if t.Choice == d.Recorded {
			return t.Count
		}
	}
	return 0
}

// String is the one-line distribution, e.g.
// "calls fork 4/5 · calls read_file 1/5 (recorded: calls fork)".
func (d Distribution) String() string {
	var parts []string
	for _, t := range d.Choices {
		parts = append(parts, fmt.Sprintf("%s %d/%d", t.Choice, t.Count, d.Samples))
	}
	if d.Failed > 0 {
		parts = append(parts, fmt.Sprintf("failed %d/%d", d.Failed, d.Samples))
	}
	return strings.Join(parts, " · ") + " (recorded: " + d.Recorded + ")"
}

// Err returns an error when every sample failed (the first error), else nil.
func (d Distribution) Err() error {
	if d.Samples > 0 && d.Failed == d.Samples && len(d.Errors) > 0 {
		return d.Errors[0]
	}
	if d.Samples > 0 && d.Failed == d.Samples {
		return errors.New("every sample failed")
	}
	return nil
}
