package importers

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", MaxLine+10)
	in := "{\"a\":1}\r\n\n   \n{\"b\":2}\n" + long + "\n{\"c\":3}\n{\"d\":"
	lr := NewLineReader(strings.NewReader(in))
	type got struct {
		line  string
		n     int
		unter bool
		err   error
	}
	var all []got
	for {
		line, n, unter, err := lr.Next()
		if err == io.EOF {
			break
		}
		all = append(all, got{string(line), n, unter, err})
		// the line read again in place, from its span
		if off, size := lr.Span(); err == nil && strings.TrimSpace(in[off:off+int64(size)]) != string(line) {
			t.Errorf("line %d: span %d+%d holds %q, want %q", n, off, size, in[off:off+int64(size)], line)
		}
		if len(all) > 10 {
			t.Fatal("no end")
		}
	}
	want := []got{
		{`{"a":1}`, 1, false, nil},
		{`{"b":2}`, 4, false, nil},
		{"", 5, false, ErrLineTooLong},
		{`{"c":3}`, 6, false, nil},
		{`{"d":`, 7, true, nil},
	}
	if len(all) != len(want) {
		t.Fatalf("got %d lines, want %d: %+v", len(all), len(want), all)
	}
	for i := range want {
		if all[i].line != want[i].line || all[i].n != want[i].n || all[i].unter != want[i].unter || !errors.Is(all[i].err, want[i].err) {
			t.Errorf("line %d = %q n=%d unterminated=%v err=%v, want %q n=%d unterminated=%v err=%v", i,
				all[i].line, all[i].n, all[i].unter, all[i].err, want[i].line, want[i].n, want[i].unter, want[i].err)
		}
	}
}

func TestReport_Problem(t *testing.T) {
	var r Report
	if err := r.Problem(Options{}, "a.jsonl", 3, errors.New("bad json")); err != nil {
		t.Errorf("Problem (not strict) = %v, want nil", err)
	}
	err := r.Problem(Options{Strict: true}, "a.jsonl", 4, errors.New("bad json"))
	if err == nil || err.Error() != "a.jsonl:4: bad json" {
		t.Errorf("Problem (strict) = %v, want a.jsonl:4: bad json", err)
	}
	if len(r.Problems) != 2 || r.Problems[1].Line != 4 {
		t.Errorf("Problems = %+v", r.Problems)
	}
	r.Skip("x")
	r.Skip("x")
	if r.Skipped["x"] != 2 {
		t.Errorf("Skipped = %v", r.Skipped)
	}
}
