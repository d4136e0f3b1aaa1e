package store

import (
	"database/sql"
	"database/sql/driver"
	"testing"
)

// A rowReader converts the driver's values as database/sql's Scan does
// for the store's columns, and refuses what Scan refused.
func TestRowReader(t *testing.T) {
	r := &rowReader{vals: []driver.Value{int64(7), "8", []byte("9"), float64(10), nil, "text", []byte("bytes"), int64(11), nil, []byte{1}}}
	if got := []int64{r.int64(), r.int64(), r.int64(), r.int64()}; got[0] != 7 || got[1] != 8 || got[2] != 9 || got[3] != 10 {
		t.Errorf("integers %v", got)
	}
	if n := r.nullInt64(); n != (sql.NullInt64{}) {
		t.Errorf("NULL read as %+v", n)
	}
	if a, b, c := r.string(), r.string(), r.string(); a != "text" || b != "bytes" || c != "11" {
		t.Errorf("texts %q %q %q", a, b, c)
	}
	if b := r.bytes(); b != nil {
		t.Errorf("NULL bytes %v", b)
	}
	if b := r.bytes(); len(b) != 1 || r.err != nil {
		t.Errorf("bytes %v, %v", b, r.err)
	}
	for _, bad := range []struct {
		v    driver.Value
		read func(*rowReader)
	}{
		{nil, func(r *rowReader) { r.string() }},
		{nil, func(r *rowReader) { r.int64() }},
		{"x", func(r *rowReader) { r.int64() }},
		{1.5, func(r *rowReader) { r.int64() }},
		{true, func(r *rowReader) { r.string() }},
	} {
		r := &rowReader{vals: []driver.Value{bad.v}}
		bad.read(r)
		if r.err == nil {
			t.Errorf("%#v read without an error", bad.v)
		}
	}
	r = &rowReader{vals: []driver.Value{int64(1)}}
	r.int64()
	r.int64()
	if r.err == nil {
		t.Error("a column past the row's end read without an error")
	}
}
