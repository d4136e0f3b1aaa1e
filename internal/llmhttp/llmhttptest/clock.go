// Package llmhttptest holds what tests of llmhttp's users share: a Clock
// that never sleeps.
package llmhttptest

import (
	"context"
	"sync"
	"time"
)

// Clock is an llmhttp.Clock for tests: Sleep returns at once (with ctx's
// error when it is done) and records the wait, moving Now forward by it,
// so a test of retries neither waits for a backoff or a Retry-After nor
// depends on how fast the machine is.
type Clock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

// NewClock returns a Clock whose Now starts at start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now is the start plus every wait so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep records d and returns without waiting.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// Waits returns the waits asked for, in order.
func (c *Clock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}
