package analysis

import (
	"time"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/config"
	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/money"
)

// Policy is the team's policy as `.inspect.yaml` gives it (package config
// reads the file; PolicyOf turns it into a Policy), with what a command's
// flags override. The zero value is every default.
type Policy struct {
	// Name is the policy file it came from as messages name it
	// (findings.Report.Policy); "" for none.
	Name string
	// Options are the audit's thresholds and rules turned off; nil means
	// findings.NewOptions(rules.All).
	Options *findings.Options
	// Prices, when set, put money on calls, runs and findings.
	Prices *money.Table
	// Ignore are the accepted findings.
	Ignore []findings.Ignore
	// Lifetime is how long a finished request stays reusable
	// (cache-lifetime); 0 means the default (5 minutes).
	Lifetime time.Duration
	// MinPrefix is the provider's minimum cacheable prefix in tokens
	// (`inspect cache --min-prefix`); 0 means cache.DefaultMinPrefix.
	MinPrefix int64
	// Now is the clock ignore entries expire against; nil means time.Now.
	Now func() time.Time
}

// PolicyOf is the policy config c gives: its thresholds and rules, prices,
// ignore entries and cache lifetime. A nil c is every default.
func PolicyOf(c *config.Config) (*Policy, error) {
	if c == nil {
		return &Policy{}, nil
	}
	o, err := c.Options()
	if err != nil {
		return nil, err
	}
	p := &Policy{Name: c.Name, Options: o, Prices: c.Prices, Ignore: c.Ignore}
	if d, _, ok := c.Lifetime(); ok {
		p.Lifetime = d
	}
	return p, nil
}

// CacheOptions are the settings of every prompt-cache analysis under p —
// inspect cache, show, audit, graph, diff and the web pages alike: its
// lifetime, minimum prefix and prices. The analyses a graph's labels and
// an audit need are the same with Brief set.
func (p *Policy) CacheOptions() *cache.Options {
	if p == nil {
		return &cache.Options{}
	}
	return &cache.Options{Lifetime: p.Lifetime, MinPrefix: p.MinPrefix, Prices: p.Prices}
}

// briefOptions are CacheOptions for a brief analysis.
func (p *Policy) briefOptions() *cache.Options {
	o := p.CacheOptions()
	o.Brief = true
	return o
}
