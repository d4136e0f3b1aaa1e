package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/inspect-dev/inspect/analysis"
	"github.com/inspect-dev/inspect/config"
)

// loadedConfig is the config a Factory read once, or the error reading it.
type loadedConfig struct {
	c   *config.Config
	err error
}

// Config returns the team's policy: the file --config names, else the
// nearest .inspect.yaml from the working folder up to the repository root
// or the home folder (config.Find), else an empty
// config (every default). A file with problems is a usage error listing
// each as FILE:LINE: KEY: message.
func (f *Factory) Config() (*config.Config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cfg == nil {
		c, err := f.readConfig()
		f.cfg = &loadedConfig{c: c, err: err}
	}
	return f.cfg.c, f.cfg.err
}

func (f *Factory) readConfig() (*config.Config, error) {
	wd := ""
	if f.Getwd != nil {
		wd, _ = f.Getwd()
	}
	path := f.ConfigPath
	if path == "" {
		if wd == "" {
			return &config.Config{}, nil
		}
		found, err := config.Find(wd)
		if err != nil {
			return nil, Usagef("look for %s: %v; give the policy file with --config FILE", config.FileName, err)
		}
		if found == "" {
			return &config.Config{}, nil
		}
		path = found
	} else if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, Usagef("--config %s: no such file; give an existing file, or write one with `inspect init`", path)
	}
	c, err := config.Load(path, config.DisplayName(path, wd))
	if err != nil {
		var errs config.Errors
		var one *config.Error
		if errors.As(err, &errs) || errors.As(err, &one) {
			return nil, &UsageError{Err: fmt.Errorf("%w\nfix the file, or point --config at another", err)}
		}
		return nil, err
	}
	return c, nil
}

// policy returns the team's policy in force: the config's thresholds,
// rules, prices, ignore entries and cache lifetime, then every --set
// (flags win).
func policy(f *Factory, sets []string) (*analysis.Policy, error) {
	c, err := f.Config()
	if err != nil {
		return nil, err
	}
	p, err := analysis.PolicyOf(c)
	if err != nil {
		return nil, err
	}
	for _, kv := range sets {
		if err := p.Options.Set(kv); err != nil {
			return nil, Usagef("--set %s: %v", kv, err)
		}
	}
	if err := p.Options.Validate(); err != nil {
		return nil, Usagef("%v", err)
	}
	return p, nil
}

// lenientPolicy is the policy for the commands that only show a run
// (graph, show, timeline): a broken policy file is audit's to report, not
// theirs; they read every default then, and the file's prices and cache
// lifetime when it could be read.
func lenientPolicy(f *Factory) *analysis.Policy {
	if p, err := policy(f, nil); err == nil {
		return p
	}
	p := &analysis.Policy{}
	if c, err := f.Config(); err == nil {
		p.Prices = c.Prices
		if d, _, ok := c.Lifetime(); ok {
			p.Lifetime = d
		}
	}
	return p
}
