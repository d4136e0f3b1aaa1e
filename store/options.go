package store

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/inspect-dev/inspect/record"
)

// optionsColumn is a run's record.Options as the runs table's options
// column holds them: one JSON object, its keys in this order (the order
// encoding/json gave the map every earlier version wrote, so a run is
// written byte for byte as before). Our runtime's runs have maxForkDepth,
// maxSteps, realtime and scripted (and script when scripted); imported
// runs have only what their importer learnt.
type optionsColumn struct {
	Instructions map[string]string `json:"instructions,omitempty"`
	MaxForkDepth *int              `json:"maxForkDepth,omitempty"`
	MaxSteps     *int              `json:"maxSteps,omitempty"`
	ProjectDir   string            `json:"projectDir,omitempty"`
	Realtime     *bool             `json:"realtime,omitempty"`
	RequestsLack []string          `json:"requestsLack,omitempty"`
	Script       string            `json:"script,omitempty"`
	Scripted     *bool             `json:"scripted,omitempty"`
	Redacted     int               `json:"secretsRedacted,omitempty"`
}

// The options column's keys, as optionsColumn names them.
const (
	optInstructions = "instructions"
	optMaxForkDepth = "maxForkDepth"
	optMaxSteps     = "maxSteps"
	optProjectDir   = "projectDir"
	optRealtime     = "realtime"
	optRequestsLack = "requestsLack"
	optScript       = "script"
	optScripted     = "scripted"
	optRedacted     = "secretsRedacted"
)

// EncodeOptions is o as the runs table's options column holds it (JSON
// text; `{}` when o is empty), for a dump that shows a stored run as the
// file has it.
func EncodeOptions(o record.Options) ([]byte, error) {
	c := optionsColumn{Instructions: o.Instructions, ProjectDir: o.ProjectDir, RequestsLack: o.RequestsLack, Redacted: o.Redacted}
	if rt := o.Runtime; rt != nil {
		c.MaxForkDepth, c.MaxSteps = &rt.MaxForkDepth, &rt.MaxSteps
		c.Realtime, c.Scripted = &rt.Realtime, &rt.Scripted
		c.Script = rt.Script
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encode run options: %w", err)
	}
	return b, nil
}

// decodeOptions reads an options column. It is as lenient as the readers
// of the map every earlier version decoded it into: a known key whose
// value has another type than the one written reads as absent (a list or
// a map keeps the strings it holds), and a key this version does not know
// is ignored: nothing here acts on it, and a copy of the run to another
// file keeps the column as it was (copyRun), so a key a newer version
// wrote is not lost on the way. Runtime is set when the column has a
// usable maxForkDepth, which every run of our runtime has (with maxSteps,
// realtime and scripted): a reader of Runtime then knows the depth that
// applied, never a zero that stands for "not recorded".
func decodeOptions(col string) (record.Options, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(col), &m); err != nil {
		return record.Options{}, err
	}
	var o record.Options
	o.ProjectDir, _ = m[optProjectDir].(string)
	o.Redacted, _ = optCount(m[optRedacted])
	switch v := m[optRequestsLack].(type) {
	case []any:
		for _, x := range v {
			if s, ok := x.(string); ok {
				o.RequestsLack = append(o.RequestsLack, s)
			}
		}
	}
	switch v := m[optInstructions].(type) {
	case map[string]any:
		o.Instructions = make(map[string]string, len(v))
		for k, x := range v {
			if s, ok := x.(string); ok {
				o.Instructions[k] = s
			}
		}
	}
	if depth, ok := optCount(m[optMaxForkDepth]); ok {
		rt := &record.RuntimeOptions{MaxForkDepth: depth}
		rt.MaxSteps, _ = optCount(m[optMaxSteps])
		rt.Realtime, _ = m[optRealtime].(bool)
		rt.Scripted, _ = m[optScripted].(bool)
		rt.Script, _ = m[optScript].(string)
		o.Runtime = rt
	}
	return o, nil
}

// optCount is a JSON number that our runtime could have written as a count:
// a whole number from 0 to MaxInt32.
func optCount(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f < 0 || f > math.MaxInt32 || f != math.Trunc(f) {
		return 0, false
	}
	return int(f), true
}
