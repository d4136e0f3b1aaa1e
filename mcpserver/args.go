package mcpserver

import (
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/inspect-dev/inspect/findings"
	"github.com/inspect-dev/inspect/findings/rules"
	"github.com/inspect-dev/inspect/internal/when"
)

// ArgError is a tool argument the server refused before anything was
// read: its text names the argument first ("run: …"), so an agent knows
// which one to correct.
type ArgError struct {
	// Arg is the argument's name as the tool's input schema spells it.
	Arg string
	// Msg says what is wrong and what is accepted.
	Msg string
}

func (e *ArgError) Error() string { return e.Arg + ": " + e.Msg }

func argErrorf(arg, format string, a ...any) *ArgError {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// RunRef is a validated run reference: never a path the client chose,
// never a flag.
type RunRef struct {
	// DB is "" for the database inspect mcp was started on, else one of
	// the files its --allow-db named, spelled as it was given there.
	DB string
	// Run is "latest" or a lower-case hexadecimal run id or a prefix of one.
	Run string
}

func (r RunRef) String() string {
	if r.DB == "" {
		return r.Run
	}
	return r.DB + ":" + r.Run
}

// runIDRe is what a run id or a prefix of one looks like: run ids are 12
// lower-case hex digits (store.NewRunID); a longer one is refused.
var runIDRe = regexp.MustCompile(`^[0-9a-f]{1,64}$`)

// refs checks run references against the databases the user allowed.
type refs struct {
	// allowed maps each --allow-db file's absolute path to its spelling
	// at start.
	allowed map[string]string
	// wd is the folder a relative name is read from.
	wd string
}

func newRefs(wd string, allowed []string) *refs {
	r := &refs{allowed: map[string]string{}, wd: wd}
	for _, a := range allowed {
		r.allowed[r.abs(a)] = a
	}
	return r
}

func (r *refs) abs(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.wd, p)
	}
	return filepath.Clean(p)
}

// run parses the run reference s given as argument arg: "" and "latest"
// mean the newest run, else a hex id or prefix; FILE.db:RUN only for a file
// the user allowed when starting inspect mcp. Nothing is opened here.
func (r *refs) run(arg, s string) (RunRef, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "latest" {
		return RunRef{Run: "latest"}, nil
	}
	ref := RunRef{Run: s}
	if i := strings.LastIndex(s, ".db:"); i >= 0 {
		ref = RunRef{DB: s[:i+3], Run: s[i+4:]}
	} else if strings.HasSuffix(s, ".db") {
		ref = RunRef{DB: s, Run: "latest"}
	}
	if ref.DB != "" {
		spelled, ok := r.allowed[r.abs(ref.DB)]
		if !ok {
			return RunRef{}, argErrorf(arg, "%q names database file %s, which inspect mcp was not started with: a run is read from the user's database, or from a file the user allowed with inspect mcp --allow-db FILE%s", s, ref.DB, r.allowedList())
		}
		ref.DB = spelled
	}
	if ref.Run == "" {
		ref.Run = "latest"
	}
	if ref.Run != "latest" {
		low := strings.ToLower(ref.Run)
		if !runIDRe.MatchString(low) {
			return RunRef{}, argErrorf(arg, "no run matches %q: a run is latest, or a run's id (hexadecimal, as list_runs shows it) or a unique prefix of one", s)
		}
		ref.Run = low
	}
	return ref, nil
}

func (r *refs) allowedList() string {
	if len(r.allowed) == 0 {
		return " (it was started with none)"
	}
	var names []string
	for _, a := range r.allowed {
		names = append(names, a)
	}
	sort.Strings(names)
	return " (allowed: " + strings.Join(names, ", ") + ")"
}

// nodeRe is a node reference: n<seq> as graph and audit number nodes.
var nodeRe = regexp.MustCompile(`^[nN]?([0-9]{1,18})$`)

// node parses the node reference s given as argument arg.
func node(arg, s string) (int64, error) {
	m := nodeRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		if strings.TrimSpace(s) == "" {
			return 0, argErrorf(arg, "give the node, n<number> as graph and audit number them (e.g. n7)")
		}
		return 0, argErrorf(arg, "%q is not a node reference: write n<number> as graph and audit number them (e.g. n7)", s)
	}
	seq, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || seq <= 0 {
		return 0, argErrorf(arg, "%q is not a node reference: nodes are numbered from n1", s)
	}
	return seq, nil
}

// rule checks that s names one of the audit's rules.
func rule(arg, s string) (*findings.Rule, error) {
	r := findings.Lookup(rules.All, strings.TrimSpace(s))
	if r == nil {
		var ids []string
		for _, r := range rules.All {
			ids = append(ids, r.ID)
		}
		return nil, argErrorf(arg, "no rule %q; the rules are: %s", s, strings.Join(ids, ", "))
	}
	return r, nil
}

// Threshold is one validated threshold of audit's set argument.
type Threshold struct{ Name, Value string }

// String is NAME=VALUE.
func (t Threshold) String() string { return t.Name + "=" + t.Value }

// thresholds checks each NAME=VALUE of set: a threshold of a rule, with a
// value it accepts.
func thresholds(arg string, set []string) ([]Threshold, error) {
	var out []Threshold
	for _, kv := range set {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, argErrorf(arg, "%q is not NAME=VALUE (explain_rule lists a rule's thresholds)", kv)
		}
		o := findings.NewOptions(rules.All)
		if err := o.SetFrom(name, value, arg); err != nil {
			return nil, argErrorf(arg, "%s: %v", kv, err)
		}
		if err := o.Validate(); err != nil {
			return nil, &ArgError{Arg: arg, Msg: strings.TrimPrefix(err.Error(), arg+": ")}
		}
		out = append(out, Threshold{Name: name, Value: value})
	}
	return out, nil
}

// RunQuery is list_runs' validated filter.
type RunQuery struct {
	// Statuses keeps runs with one of these (ok, error, …); empty keeps all.
	Statuses []string
	// Source, Agent and Grep keep runs of this source format, in which
	// this agent took part, whose id, project, tasks or tags hold this text.
	Source, Agent, Grep string
	// Since and Until keep runs started at or after Since and before Until
	// (zero: no bound).
	Since, Until time.Time
	// Tags keeps runs with every one of these tags ("" value: the key alone).
	Tags map[string]string
	// Limit keeps at most this many, newest first.
	Limit int
}

// runStatuses are the statuses list_runs filters on.
var runStatuses = []string{"ok", "error", "exhausted", "cancelled", "interrupted", "running"}

// query validates list_runs' arguments.
func query(a ListArgs, now time.Time) (RunQuery, error) {
	q := RunQuery{Source: a.Source, Agent: a.Agent, Grep: a.Grep, Limit: a.Limit}
	if q.Limit <= 0 {
		q.Limit = 20
	}
	if a.Status != "" {
		for _, s := range strings.Split(a.Status, ",") {
			s = strings.TrimSpace(s)
			if !contains(runStatuses, s) {
				return q, argErrorf("status", "unknown status %q; use one of: %s (comma-separated)", s, strings.Join(runStatuses, ", "))
			}
			q.Statuses = append(q.Statuses, s)
		}
	}
	for _, b := range []struct {
		arg, v string
		t      *time.Time
	}{{"since", a.Since, &q.Since}, {"until", a.Until, &q.Until}} {
		if b.v == "" {
			continue
		}
		t, err := when.Parse(b.v, now)
		if err != nil {
			return q, argErrorf(b.arg, "%v", err)
		}
		*b.t = t
	}
	if a.Tag != "" {
		k, v, _ := strings.Cut(a.Tag, "=")
		if strings.TrimSpace(k) == "" {
			return q, argErrorf("tag", "%q: give KEY=VALUE or KEY", a.Tag)
		}
		q.Tags = map[string]string{k: v}
	}
	return q, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
