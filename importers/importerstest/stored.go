package importerstest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/inspect-dev/inspect/graph"
	"github.com/inspect-dev/inspect/importers"
	"github.com/inspect-dev/inspect/record"
	"github.com/inspect-dev/inspect/store"
)

// StoredRun renders run id of db as text, one JSON line for the run and
// one per node in sequence order, with each llm node's request (rebuilt
// from the store and checked against its hash: its size and SHA-256) and
// response: every byte an
// import recorded, for comparing two imports of the same session. Each key
// of replace found in the text (a temporary folder) is written as its
// value.
func StoredRun(t testing.TB, db *store.DB, id string, replace map[string]string) string {
	t.Helper()
	ctx := context.Background()
	run, err := db.LoadRun(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	line := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	r := *run
	r.ID = ""
	j, err := runLine(r)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(j)
	b.WriteByte('\n')
	err = db.ScanNodes(ctx, run, func(n *record.Node) error {
		if n.LLM != nil {
			l := *n.LLM
			req, err := db.Request(ctx, id, n.Seq)
			if err != nil && !errors.Is(err, store.ErrNoRequest) {
				return err
			}
			resp, err := db.Response(ctx, id, n.Seq)
			if err != nil && !errors.Is(err, store.ErrNoRequest) {
				return err
			}
			l.Request, l.Response = nil, nil
			nn := *n
			nn.LLM = &l
			line(nn)
			sum := sha256.Sum256(req)
			fmt.Fprintf(&b, "  request %d bytes sha256 %x\n  response %s\n", len(req), sum, resp)
			return nil
		}
		line(n)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for k, v := range replace {
		if k != "" {
			out = strings.ReplaceAll(out, k, v)
		}
	}
	return out
}

// runLine is r as one JSON object, its fields in record.Run's order, with
// Options as the store's options column holds them (store.EncodeOptions):
// the bytes the import wrote, not a Go struct's rendering of them.
func runLine(r record.Run) ([]byte, error) {
	v := reflect.ValueOf(r)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range reflect.VisibleFields(v.Type()) {
		var j []byte
		var err error
		if f.Name == "Options" {
			j, err = store.EncodeOptions(r.Options)
		} else {
			j, err = json.Marshal(v.FieldByIndex(f.Index).Interface())
		}
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:", f.Name)
		b.Write(j)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

var update = flag.Bool("update", false, "rewrite the stored-run goldens under testdata/stored (SameStoredRun)")

// SameStoredRun imports path as f into a new store file and compares the
// stored run (StoredRun, with dir written as $DIR) with the golden file
// testdata/stored/NAME.txt of the calling package: the pin that an importer
// still records the same run, node for node and byte for byte, after a
// change to how it reads. With digest the golden holds the dump's size and
// SHA-256 only (a generated session too big to keep). -update rewrites the
// golden.
func SameStoredRun(t *testing.T, name string, f importers.Format, path, dir string, digest bool) {
	t.Helper()
	SameStoredRunWith(t, name, f, path, dir, digest, importers.Options{})
}

// SameStoredRunWith is SameStoredRun, importing under opt (a project
// folder named, say).
func SameStoredRunWith(t *testing.T, name string, f importers.Format, path, dir string, digest bool, opt importers.Options) {
	t.Helper()
	db := Store(t)
	res, err := importers.Import(context.Background(), db, f, path, opt)
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, r := range res {
		got.WriteString(StoredRun(t, db, r.RunID, map[string]string{dir: "$DIR"}))
	}
	if digest {
		sum := sha256.Sum256([]byte(got.String()))
		nodes := strings.Count(got.String(), "\n{")
		got.Reset()
		fmt.Fprintf(&got, "%d lines after the run's, %x\n", nodes, sum)
	}
	golden := filepath.Join("testdata", "stored", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got.String() != string(want) {
		g, w := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < len(g) || i < len(w); i++ {
			var gl, wl string
			if i < len(g) {
				gl = g[i]
			}
			if i < len(w) {
				wl = w[i]
			}
			if gl != wl {
				t.Fatalf("%s: the stored run differs from %s at line %d:\ngot:  %.600s\nwant: %.600s", name, golden, i+1, gl, wl)
			}
		}
	}
}

// StreamAndTree imports path as f twice, through importers.Import (which
// streams a Streamer's sessions) and as the whole tree f.Read gives, each
// into a store file of its own; it fails unless both record the same run,
// and returns the streamed run as graph loads it.
func StreamAndTree(t *testing.T, f importers.Format, path string) *graph.Run {
	t.Helper()
	ctx := context.Background()
	db := Store(t)
	res, err := importers.Import(ctx, db, f, path, importers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree := ReadOne(t, f, path, importers.Options{})
	db2 := Store(t)
	id, err := importers.Write(ctx, db2, tree)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := StoredRun(t, db, res[0].RunID, nil), StoredRun(t, db2, id, nil); a != b {
		t.Errorf("%s: the stream and the tree record different runs", path)
	}
	g, err := graph.Load(ctx, db, res[0].RunID)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// NeverAnswered checks a run of one call that never got its result
// followed by turns turns, each answered: the call reads interrupted and
// every turn and answer is there.
func NeverAnswered(t *testing.T, g *graph.Run, turns int) {
	t.Helper()
	var open *graph.Node
	users, answers := 0, 0
	for _, n := range g.Nodes {
		switch {
		case n.Kind == record.KindTool:
			open = n
		case n.Kind == record.KindUser:
			users++
		case n.Kind == record.KindFinal && n.Text != "":
			answers++
		}
	}
	if open == nil || open.Status != record.StatusInterrupted || !strings.Contains(open.Error, "no result") {
		t.Errorf("the open call: %+v", open)
	}
	if users != turns+1 || answers != turns {
		t.Errorf("%d user turns, %d answers; want %d, %d", users, answers, turns+1, turns)
	}
}
