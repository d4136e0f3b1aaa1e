package store

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/inspect-dev/inspect/record"
)

// The options columns earlier versions wrote (json.Marshal of the map they
// kept), each with the typed options it reads as. Encoding those options
// must give the column back byte for byte: a run recorded now is written
// as it was before the options had a type.
var legacyOptions = []struct {
	name string
	col  string
	want record.Options
}{
	{"none", `{}`, record.Options{}},
	{"the runtime (testdata/ci/fanout-compact.db, before projectDir)",
		`{"maxForkDepth":2,"maxSteps":40,"realtime":false,"script":"../../fixtures/fanout-compact/script.yaml","scripted":true}`,
		record.Options{Runtime: &record.RuntimeOptions{MaxForkDepth: 2, MaxSteps: 40, Scripted: true, Script: "../../fixtures/fanout-compact/script.yaml"}}},
	{"the runtime with a provider",
		`{"maxForkDepth":3,"maxSteps":12,"projectDir":"/home/u/proj","realtime":true,"scripted":false}`,
		record.Options{Runtime: &record.RuntimeOptions{MaxForkDepth: 3, MaxSteps: 12, Realtime: true}, ProjectDir: "/home/u/proj"}},
	{"an import (importers/claudecode/testdata/stored/serial.txt)",
		`{"projectDir":"/nonexistent/app","requestsLack":["the system prompt","the tool definitions"]}`,
		record.Options{ProjectDir: "/nonexistent/app", RequestsLack: []string{"the system prompt", "the tool definitions"}}},
	{"an import naming instruction files",
		`{"instructions":{"Explore":".claude/agents/Explore.md","main":"CLAUDE.md"},"projectDir":"/w","requestsLack":["the tool definitions"]}`,
		record.Options{Instructions: map[string]string{"main": "CLAUDE.md", "Explore": ".claude/agents/Explore.md"}, ProjectDir: "/w", RequestsLack: []string{"the tool definitions"}}},
	{"HTML characters escaped as encoding/json does",
		`{"projectDir":"/a\u0026b","requestsLack":["\u003cthinking\u003e blocks"]}`,
		record.Options{ProjectDir: "/a&b", RequestsLack: []string{"<thinking> blocks"}}},
}

func TestOptions_Legacy(t *testing.T) {
	for _, tt := range legacyOptions {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeOptions(tt.col)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeOptions = %+v (runtime %+v), want %+v (runtime %+v)", got, got.Runtime, tt.want, tt.want.Runtime)
			}
			col, err := EncodeOptions(tt.want)
			if err != nil {
				t.Fatal(err)
			}
			if string(col) != tt.col {
				t.Errorf("EncodeOptions = %s, want %s", col, tt.col)
			}
		})
	}
}

// TestDecodeOptions_Lenient: a column a crafted or odd file holds reads as
// the map every earlier version decoded it into did for its readers: a
// value of another type than the one written is absent, a list or a map
// keeps its strings, and keys this version does not know are ignored.
func TestDecodeOptions_Lenient(t *testing.T) {
	tests := []struct {
		name string
		col  string
		want record.Options
	}{
		{"null", `null`, record.Options{}},
		{"unknown keys", `{"maxForkDepth":1,"colour":"blue","future":{"a":[1,2]}}`, record.Options{Runtime: &record.RuntimeOptions{MaxForkDepth: 1}}},
		{"wrong types", `{"projectDir":7,"requestsLack":"the system prompt","instructions":["CLAUDE.md"],"maxSteps":40}`, record.Options{}},
		{"mixed lists", `{"requestsLack":["a",1,null,"b"],"instructions":{"main":"CLAUDE.md","x":2}}`,
			record.Options{RequestsLack: []string{"a", "b"}, Instructions: map[string]string{"main": "CLAUDE.md"}}},
		{"a depth no runtime wrote", `{"maxForkDepth":-1,"maxSteps":40,"realtime":true}`, record.Options{}},
		{"a fractional depth", `{"maxForkDepth":2.5}`, record.Options{}},
		{"a huge depth", `{"maxForkDepth":1e300}`, record.Options{}},
		{"a null depth", `{"maxForkDepth":null,"scripted":true}`, record.Options{}},
		{"zero is a depth", `{"maxForkDepth":0,"maxSteps":"40","realtime":"yes","script":3}`, record.Options{Runtime: &record.RuntimeOptions{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeOptions(tt.col)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decodeOptions(%s) = %+v (runtime %+v), want %+v (runtime %+v)", tt.col, got, got.Runtime, tt.want, tt.want.Runtime)
			}
		})
	}
	for _, col := range []string{``, `[1]`, `"x"`, `{"a":`} {
		if _, err := decodeOptions(col); err == nil {
			t.Errorf("decodeOptions(%q) = nil error, want the column refused (as before)", col)
		}
	}
}

// TestLoadRun_CIBaseline: the committed baseline of docs/ci.md, recorded
// before the options had a type, reads with its runtime options.
func TestLoadRun_CIBaseline(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "baseline.db")
	copyFile(t, filepath.Join("..", "testdata", "ci", "fanout-compact.db"), path)
	db, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r, err := db.LoadRun(ctx, "089e77eb13db")
	if err != nil {
		t.Fatal(err)
	}
	want := record.Options{Runtime: &record.RuntimeOptions{MaxForkDepth: 2, MaxSteps: 40, Scripted: true, Script: "../../fixtures/fanout-compact/script.yaml"}}
	if !reflect.DeepEqual(r.Options, want) {
		t.Errorf("Options = %+v (runtime %+v), want %+v (runtime %+v)", r.Options, r.Options.Runtime, want, want.Runtime)
	}
}

// TestCopyRuns_KeepsOptionsColumn: a copy of a run keeps its options
// column byte for byte, keys this version does not know included (a newer
// version's file exported and merged loses nothing), while a reader of
// the copy gets the typed options it knows.
func TestCopyRuns_KeepsOptionsColumn(t *testing.T) {
	ctx := context.Background()
	src, _ := openTemp(t)
	rec, err := src.CreateRun(ctx, &record.Run{Started: t0, Tasks: []string{"t"}, Options: record.Options{ProjectDir: "/p"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(ctx, record.StatusOK, "", t0); err != nil {
		t.Fatal(err)
	}
	const col = `{"projectDir":"/p", "requestsLack":["the system prompt"],"zNewer":{"k":[1,"v"]}}`
	if _, err := src.w.ExecContext(ctx, `UPDATE runs SET options = ? WHERE id = ?`, col, rec.RunID()); err != nil {
		t.Fatal(err)
	}
	dst, _ := openTemp(t)
	if _, err := CopyRuns(ctx, dst, src, []string{rec.RunID()}); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := dst.r.QueryRowContext(ctx, `SELECT options FROM runs WHERE id = ?`, rec.RunID()).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != col {
		t.Errorf("copied options column = %s, want %s", got, col)
	}
	r, err := dst.LoadRun(ctx, rec.RunID())
	if err != nil {
		t.Fatal(err)
	}
	if want := (record.Options{ProjectDir: "/p", RequestsLack: []string{"the system prompt"}}); !reflect.DeepEqual(r.Options, want) {
		t.Errorf("Options = %+v, want %+v", r.Options, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
