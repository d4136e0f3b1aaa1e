package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/inspect-dev/inspect/cache"
	"github.com/inspect-dev/inspect/config"
	"github.com/inspect-dev/inspect/findings"
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

// auditOptions returns the audit options in force: the config's
// thresholds and rules, then every --set (flags win).
func auditOptions(f *Factory, sets []string) (*findings.Options, *config.Config, error) {
	c, err := f.Config()
	if err != nil {
		return nil, nil, err
	}
	o, err := c.Options()
	if err != nil {
		return nil, nil, err
	}
	for _, kv := range sets {
		if err := o.Set(kv); err != nil {
			return nil, nil, Usagef("--set %s: %v", kv, err)
		}
	}
	if err := o.Validate(); err != nil {
		return nil, nil, Usagef("%v", err)
	}
	return o, c, nil
}

// applyPolicy puts the team's policy into an audit of run g: its options,
// price table and ignore entries (its cache lifetime: briefCache).
func applyPolicy(cfg *findings.Config, o *findings.Options, c *config.Config) {
	cfg.Options, cfg.Prices, cfg.Ignore, cfg.Policy = o, c.Prices, c.Ignore, c.Name
}

// webPolicy is the team's policy for the web pages' audits and cache
// analyses (serve, report): the same as inspect audit and cache read.
func webPolicy(f *Factory) (*findings.Config, *cache.Options, error) {
	o, c, err := auditOptions(f, nil)
	if err != nil {
		return nil, nil, err
	}
	cfg := &findings.Config{Options: o, Prices: c.Prices, Ignore: c.Ignore}
	co := &cache.Options{Prices: c.Prices}
	if d, _, ok := c.Lifetime(); ok {
		co.Lifetime = d
	}
	return cfg, co, nil
}
