// Package scripted is the scripted model of DESIGN §5: deterministic model
// turns read from a script.yaml, for fixtures, tests, demos and CI. It
// implements model.Provider, estimates usage from byte counts and simulates a
// provider's prompt cache, so recorded runs look like real ones and golden
// files stay byte-stable.
package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/inspect-dev/inspect/internal/regfile"
	"github.com/inspect-dev/inspect/record"
)

// TrunkKey is the script key of the trunk conversation.
const TrunkKey = "trunk"

// DefaultLatency is the model time of a reply that gives none.
const DefaultLatency = time.Second

// MaxLatency is the longest latency or tool_latency a reply may give.
const MaxLatency = 24 * time.Hour

// Script is a parsed script.yaml.
type Script struct {
	Path  string   // as given
	Name  string   // base name, used in messages
	Tasks []string // task: or tasks:
	// Conversations maps a branch path ("" for the trunk) to its replies.
	Conversations map[string]*Conversation
	convLine      int // line of `conversations:`
}

// Conversation is the list of replies of one branch path.
type Conversation struct {
	Key     string
	Line    int
	Replies []*Reply
}

// Reply is one scripted model response.
type Reply struct {
	Line        int
	Calls       []Call
	Say         string
	Error       string // non-empty: the provider fails this call
	Status      int    // the HTTP status of Error, when it is a number
	Latency     time.Duration
	ToolLatency time.Duration
	Usage       *ReplyUsage
	// Problem, when set, makes the reply unusable: the conversation ends
	// with an error naming Line.
	Problem string
}

// ReplyUsage is a reply's explicit `usage:`. A side that is not given
// (nil) is estimated as if usage were absent: bytes / 4.
type ReplyUsage struct {
	In, Out *int64
	Cached  *int64
}

// Call is one tool call of a reply.
type Call struct {
	Name string
	Args string // JSON text as the model sends it (a string in the script is sent verbatim)
	Line int
}

// Load reads and parses the script at path. Syntax errors and a malformed
// top level are errors; a reply that cannot be used is kept and reported when
// the conversation reaches it.
func Load(path string) (*Script, error) {
	raw, err := regfile.ReadFile(path) // a FIFO is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return Parse(path, raw)
}

// Parse parses script text; path is used in messages only.
func Parse(path string, raw []byte) (*Script, error) {
	s := &Script{Path: path, Name: filepath.Base(path), Conversations: map[string]*Conversation{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s is not valid YAML: %v; fix the syntax", s.Name, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s must be a mapping with `conversations:`; see DESIGN §5 or `inspect init`", s.Name)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "task":
			if v.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d: task must be text", s.Name, v.Line)
			}
			s.Tasks = append(s.Tasks, v.Value)
		case "tasks":
			var ts []string
			if err := v.Decode(&ts); err != nil {
				return nil, fmt.Errorf("%s:%d: tasks must be a list of texts", s.Name, v.Line)
			}
			s.Tasks = append(s.Tasks, ts...)
		case "conversations":
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s:%d: conversations must map a branch path (trunk, eu, eu/fr) to a list of replies", s.Name, v.Line)
			}
			s.convLine = k.Line
			for j := 0; j+1 < len(v.Content); j += 2 {
				ck, cv := v.Content[j], v.Content[j+1]
				path := ck.Value
				if path == TrunkKey {
					path = ""
				}
				if _, dup := s.Conversations[path]; dup {
					return nil, fmt.Errorf("%s:%d: conversation %q is listed twice; merge its replies", s.Name, ck.Line, ck.Value)
				}
				c := &Conversation{Key: ck.Value, Line: ck.Line}
				if cv.Kind != yaml.SequenceNode {
					return nil, fmt.Errorf("%s:%d: conversation %q must be a list of replies", s.Name, cv.Line, ck.Value)
				}
				for _, rn := range cv.Content {
					c.Replies = append(c.Replies, parseReply(s.Name, rn))
				}
				s.Conversations[path] = c
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q; the keys are task, tasks and conversations", s.Name, k.Line, k.Value)
		}
	}
	if s.convLine == 0 {
		return nil, fmt.Errorf("%s has no `conversations:`; add at least `conversations: {trunk: [{say: ...}]}`", s.Name)
	}
	return s, nil
}

func parseReply(file string, n *yaml.Node) *Reply {
	r := &Reply{Line: n.Line, Latency: DefaultLatency}
	if n.Kind != yaml.MappingNode {
		r.Problem = "a reply must be a mapping with calls, say or error"
		return r
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "say":
			r.Say = v.Value
		case "error":
			r.Error = v.Value
			if st, err := strconv.Atoi(v.Value); err == nil {
				r.Status = st
			}
			if r.Error == "" {
				r.Error = "error"
			}
		case "latency", "tool_latency":
			d, err := parseDuration(v.Value)
			if err != nil {
				r.Problem = fmt.Sprintf("%s %q is not a duration such as 1.5s", k.Value, v.Value)
				continue
			}
			if d > MaxLatency {
				r.Problem = fmt.Sprintf("%s %s is longer than %s; no model call takes that long (it would overflow the virtual clock)", k.Value, v.Value, MaxLatency)
				continue
			}
			if k.Value == "latency" {
				r.Latency = d
			} else {
				r.ToolLatency = d
			}
		case "usage":
			var u struct {
				In     *int64 `yaml:"in"`
				Out    *int64 `yaml:"out"`
				Cached *int64 `yaml:"cached"`
			}
			if err := v.Decode(&u); err != nil {
				r.Problem = "usage must be {in: N, out: M}"
				continue
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if key := v.Content[j].Value; key != "in" && key != "out" && key != "cached" {
					r.Problem = fmt.Sprintf("unknown usage key %q; the keys are in, out, cached", key)
				}
			}
			for _, c := range []struct {
				key string
				n   *int64
			}{{"in", u.In}, {"out", u.Out}, {"cached", u.Cached}} {
				if c.n != nil && (*c.n < 0 || *c.n > record.MaxTokens) {
					r.Problem = fmt.Sprintf("usage %s: %d is impossible; token counts are between 0 and %d", c.key, *c.n, record.MaxTokens)
				}
			}
			r.Usage = &ReplyUsage{In: u.In, Out: u.Out, Cached: u.Cached}
		case "calls":
			if v.Kind != yaml.SequenceNode {
				r.Problem = "calls must be a list such as [{read_file: {path: a.md}}]"
				continue
			}
			for _, cn := range v.Content {
				if cn.Kind != yaml.MappingNode || len(cn.Content) != 2 {
					r.Problem = fmt.Sprintf("line %d: each call must be one `tool_name: {arguments}` pair", cn.Line)
					break
				}
				name, args := cn.Content[0], cn.Content[1]
				var text string
				switch {
				case args.Kind == yaml.ScalarNode && args.Tag == "!!null":
					text = "{}"
				case args.Kind == yaml.ScalarNode:
					text = args.Value // verbatim: lets a script send malformed arguments
				default:
					b, err := nodeJSON(args)
					if err != nil {
						r.Problem = fmt.Sprintf("line %d: arguments of %s: %v", args.Line, name.Value, err)
						continue
					}
					text = string(b)
				}
				r.Calls = append(r.Calls, Call{Name: name.Value, Args: text, Line: cn.Line})
			}
		default:
			r.Problem = fmt.Sprintf("unknown reply key %q; the keys are calls, say, error, latency, tool_latency, usage", k.Value)
		}
	}
	if r.Problem == "" && r.Error == "" && len(r.Calls) == 0 && r.Say == "" {
		r.Problem = "the reply has neither calls, say nor error"
	}
	return r
}

var bareNumber = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?$`)

// parseDuration accepts Go durations (1.5s, 200ms) and bare seconds (2).
func parseDuration(s string) (time.Duration, error) {
	if bareNumber.MatchString(s) {
		f, _ := strconv.ParseFloat(s, 64)
		if f > MaxLatency.Seconds() {
			return MaxLatency + 1, nil // refused by the caller, without overflowing
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err == nil && d < 0 {
		return 0, errors.New("negative")
	}
	return d, err
}

// nodeJSON converts a YAML node to JSON, keeping mapping keys in the order
// the script wrote them.
func nodeJSON(n *yaml.Node) ([]byte, error) {
	var b bytes.Buffer
	if err := writeJSON(&b, n); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func writeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := writeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return err
		}
		enc, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(enc)
	case yaml.AliasNode:
		return writeJSON(b, n.Alias)
	default:
		return fmt.Errorf("unsupported YAML at line %d", n.Line)
	}
	return nil
}
