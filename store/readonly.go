package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/inspect-dev/inspect/internal/regfile"
)

// This file is the reading side's boundary (DESIGN §6: reading never
// writes): OpenReadOnly, the check of a file's schema objects that every
// open makes, Migrate for `inspect migrate FILE`, and the advice a full disk
// gets.

// ErrReadOnly is returned by a write on a database opened with OpenReadOnly.
var ErrReadOnly = errors.New("the database was opened read-only")

// OpenReadOnly opens an existing database for reading only: nothing is
// written to the file, and a read-only file, folder or file system is
// readable. A file of an older schema is never migrated in place: it is
// read through an upgraded temporary copy (DB.FileVersion says so) and
// `inspect migrate FILE` upgrades it. A file of a newer schema, of another
// program, or holding schema objects inspect did not create is refused with
// a *SchemaError.
func OpenReadOnly(ctx context.Context, path string) (*DB, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db, version, err := openReader(ctx, path, false)
	var se sqlite3.Error
	if err != nil && errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrCantOpen) && !walHasData(path) {
		// SQLite cannot create the -shm file beside a WAL database in a
		// folder we may not write. With no -wal content there is no writer
		// and nothing outside the main file: read it as immutable.
		db, version, err = openReader(ctx, path, true)
	}
	if err != nil {
		return nil, err
	}
	if version == SchemaVersion() {
		return db, nil
	}
	if version == 0 {
		// An empty file (no schema yet) holds no runs: read an empty
		// database of the current schema in memory, without copying.
		db.Close()
		return emptyReader(ctx, path)
	}
	// An older schema: read an upgraded copy, leave the file as it is.
	cp, err := db.upgradedCopy(ctx)
	db.Close()
	if err != nil {
		return nil, err
	}
	cp.FileVersion = version
	return cp, nil
}

// openReader opens the reader pool on path (immutable: without locks, for
// a file no one can be writing) and checks the file: inspect's, not newer,
// only our schema objects. It returns the file's schema version.
//
// A WAL file with no -wal content beside it is opened read-write with
// query_only set, so that nothing is written through it and its last
// connection's close removes the -wal and -shm files opening it created: a
// read leaves no file behind (a committed baseline's checkout stays clean).
// SQLite deletes them only under an exclusive lock, so never while a writer
// (or another reader) has the file open. Otherwise (a -wal with content, a
// folder or file it cannot write) the pool is read-only: it leaves what it
// finds, and never checkpoints a -wal it did not create into the file.
func openReader(ctx context.Context, path string, immutable bool) (*DB, int, error) {
	if !immutable && isWAL(path) && !walHasData(path) {
		db, version, err := openPool(ctx, path, "mode=rw&_query_only=1")
		if err == nil {
			return db, version, nil
		}
		var se sqlite3.Error
		if !errors.As(err, &se) || (se.Code != sqlite3.ErrReadonly && se.Code != sqlite3.ErrCantOpen && se.Code != sqlite3.ErrPerm) {
			return nil, 0, err
		}
		// A folder or file it may not write: read-only, as below.
	}
	mode := "mode=ro"
	if immutable {
		mode += "&immutable=1"
	}
	return openPool(ctx, path, mode)
}

// openPool opens the reader pool on path with the given URI parameters and
// checks the file.
func openPool(ctx context.Context, path, mode string) (*DB, int, error) {
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + mode + "&_busy_timeout=10000&_foreign_keys=on"
	r, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, 0, err
	}
	r.SetMaxOpenConns(4)
	db := &DB{Path: path, Now: nowFunc, r: r}
	version, err := db.check(ctx, db.r)
	if err != nil {
		r.Close()
		return nil, 0, err
	}
	db.FileVersion = version
	return db, version, nil
}

// OpenEmpty is a reader of an empty database of the current schema, in
// memory, standing for path, which does not exist yet: `inspect serve`
// before the first run reads it until the file appears. Nothing is created.
func OpenEmpty(ctx context.Context, path string) (*DB, error) {
	return emptyReader(ctx, path)
}

// emptyReader is a reader of an empty database of the current schema, in
// memory, standing for the empty file at path.
func emptyReader(ctx context.Context, path string) (*DB, error) {
	registerDriver()
	mem, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return nil, err
	}
	mem.SetMaxOpenConns(1) // one connection: one in-memory database
	for _, name := range migrations() {
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err == nil {
			_, err = mem.ExecContext(ctx, string(body))
		}
		if err != nil {
			mem.Close()
			return nil, fmt.Errorf("internal error: migration %s: %w", name, err)
		}
	}
	return &DB{Path: path, Now: nowFunc, r: mem, Empty: true}, nil
}

// isWAL reports whether the file at path is a SQLite database in WAL mode
// (its header's read and write versions are 2). Only such a file is opened
// read-write to read it: a rollback-journal file's hot journal would be
// rolled back into it.
func isWAL(path string) bool {
	f, err := regfile.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 20)
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return head[18] == 2 && head[19] == 2
}

// walHasData reports whether path has a non-empty -wal file beside it.
func walHasData(path string) bool {
	fi, err := os.Stat(path + "-wal")
	return err == nil && fi.Size() > 0
}

// check reads the file's version and application id through q and refuses
// what inspect must not read: another program's database, a newer schema,
// schema objects that migrations 1..version do not create.
func (db *DB) check(ctx context.Context, q *sql.DB) (int, error) {
	var version, app int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, db.wrapOpenErr(err)
	}
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&app); err != nil {
		return 0, db.wrapOpenErr(err)
	}
	have, err := schemaObjects(ctx, q)
	if err != nil {
		return 0, db.wrapOpenErr(err)
	}
	if app != appID && (len(have) > 0 || version != 0) {
		return 0, &SchemaError{Path: db.Path, Reason: "a SQLite database of another program, not of inspect",
			Advice: "point --db (or INSPECT_DB) at an inspect runs database, or at a new file name"}
	}
	if n := SchemaVersion(); version > n {
		return 0, &SchemaError{Path: db.Path,
			Reason: fmt.Sprintf("written by a newer inspect (schema v%d; this build knows up to v%d)", version, n),
			Advice: "upgrade inspect to read it, or use another --db file"}
	}
	want, err := expectedObjects(ctx, version)
	if err != nil {
		return 0, err
	}
	if problems := compareObjects(have, want); len(problems) > 0 {
		return 0, damaged(db.Path, strings.Join(problems, "; "))
	}
	return version, nil
}

// damaged is the SchemaError of a file inspect will not trust.
func damaged(path, why string) *SchemaError {
	return &SchemaError{Path: path, Reason: "the file is damaged or was changed outside inspect: " + why,
		Advice: "inspect will not read or write it; restore it from a copy, or point --db (or INSPECT_DB) at another file"}
}

// object is one row of sqlite_master that matters: its type, the table it
// belongs to and the SQL that defines it.
type object struct{ typ, table, sql string }

// schemaObjects lists the file's schema objects by name, leaving out
// SQLite's own (sqlite_autoindex_*, sqlite_stat*, sqlite_sequence).
func schemaObjects(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[string]object, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master WHERE name NOT LIKE 'sqlite\_%' ESCAPE '\'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]object{}
	for rows.Next() {
		var name string
		var o object
		if err := rows.Scan(&o.typ, &name, &o.table, &o.sql); err != nil {
			return nil, err
		}
		out[name] = o
	}
	return out, rows.Err()
}

// expectedObjects are the schema objects migrations 1..version create,
// found by applying them to an empty in-memory database.
func expectedObjects(ctx context.Context, version int) (map[string]object, error) {
	if version == 0 {
		return map[string]object{}, nil
	}
	registerDriver() // the migrations call inspect_sha256
	mem, err := sql.Open(driverName, ":memory:")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	mem.SetMaxOpenConns(1) // one connection: one in-memory database
	for _, name := range migrations()[:version] {
		body, err := migrationFS.ReadFile("migrations/" + name)
		if err != nil {
			return nil, err
		}
		if _, err := mem.ExecContext(ctx, string(body)); err != nil {
			return nil, fmt.Errorf("internal error: migration %s: %w", name, err)
		}
	}
	return schemaObjects(ctx, mem)
}

// compareObjects lists what differs between a file's objects and the
// expected ones, in name order: objects added, of another kind or missing,
// then those whose SQL differs.
func compareObjects(have, want map[string]object) []string {
	var problems, redefined []string
	for _, name := range sortedNames(have) {
		h := have[name]
		w, ok := want[name]
		switch {
		case !ok && h.typ == "table":
			problems = append(problems, fmt.Sprintf("a table %q inspect did not create", name))
		case !ok:
			problems = append(problems, fmt.Sprintf("a %s %q on %s that inspect did not create", h.typ, name, h.table))
		case h.typ != w.typ:
			problems = append(problems, fmt.Sprintf("%q is a %s where inspect keeps a %s", name, h.typ, w.typ))
		case h.table != w.table:
			problems = append(problems, fmt.Sprintf("%s %q belongs to %s, not %s", h.typ, name, h.table, w.table))
		case canonicalSQL(h.sql) != canonicalSQL(w.sql):
			// a column changed behind inspect's back: a generated column
			// of zeroblob(300000000) made every read of a node take 300 MB
			redefined = append(redefined, fmt.Sprintf("%s %q is not defined as inspect defines it", h.typ, name))
		}
	}
	for _, name := range sortedNames(want) {
		if _, ok := have[name]; !ok {
			problems = append(problems, fmt.Sprintf("its %s %q is missing", want[name].typ, name))
		}
	}
	problems = append(problems, redefined...) // after what is missing, added or of another kind
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("%d more differences", len(problems)-3))
	}
	return problems
}

// canonicalSQL is an object's SQL for comparing: runs of white space as
// one space, identifiers' double quotes dropped (SQLite's own rewrites —
// ALTER TABLE RENAME, ADD COLUMN — differ in those between its versions).
func canonicalSQL(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, `"`, "")), " ")
}

func sortedNames(m map[string]object) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// upgradedCopy copies the file (VACUUM INTO, which only reads it) to a
// temporary folder, migrates the copy and opens it read-only. Close
// removes the copy. Path stays the original file's, for messages.
func (db *DB) upgradedCopy(ctx context.Context) (*DB, error) {
	dir, err := os.MkdirTemp("", "inspect-read-")
	if err != nil {
		return nil, fmt.Errorf("read %s: a temporary copy to upgrade: %w", db.Path, err)
	}
	fail := func(err error) (*DB, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("read %s (schema v%d) through an upgraded copy: %w", db.Path, db.FileVersion, err)
	}
	cp := filepath.Join(dir, "copy.db")
	// VACUUM INTO writes only the copy, but query_only (openReader) refuses
	// it: lift it on this connection, which is closed with the pool.
	conn, err := db.r.Conn(ctx)
	if err != nil {
		return fail(db.wrapOpenErr(err))
	}
	_, err = conn.ExecContext(ctx, "PRAGMA query_only = 0")
	if err == nil {
		_, err = conn.ExecContext(ctx, "VACUUM INTO ?", cp)
	}
	conn.Raw(func(any) error { return driver.ErrBadConn }) // never back to the pool without query_only
	conn.Close()
	if err != nil {
		return fail(db.wrapOpenErr(err))
	}
	w, err := Open(ctx, cp)
	if err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return fail(err)
	}
	out, _, err := openReader(ctx, cp, false)
	if err != nil {
		return fail(err)
	}
	out.Path = db.Path
	out.cleanup = func() error { return os.RemoveAll(dir) }
	return out, nil
}

// Migrate upgrades the existing database at path to this build's schema in
// place (`inspect migrate FILE`) and returns the version it had and the
// version it has now. Readers never do this; writers (inspect run) do.
func Migrate(ctx context.Context, path string) (from, to int, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, 0, fmt.Errorf("migrate: %w", err)
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		return 0, 0, err
	}
	from = ro.FileVersion
	ro.Close()
	db, err := Open(ctx, path)
	if err != nil {
		return from, 0, err
	}
	defer db.Close()
	to, err = db.Version(ctx)
	return from, to, err
}

// DiskFullError is a write that failed because the disk (or the file
// system's quota) is full. Each write is one transaction, so everything
// committed before it is intact.
type DiskFullError struct {
	Path string
	Err  error
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("%s: %v: the disk holding it is full; free some space (or point --db at a file on another disk) and run again; what was recorded before this is intact", e.Path, e.Err)
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// full turns a SQLITE_FULL error in *err into a *DiskFullError; writers
// defer it.
func (db *DB) full(err *error) {
	var se sqlite3.Error
	var df *DiskFullError
	if *err != nil && !errors.As(*err, &df) && errors.As(*err, &se) && se.Code == sqlite3.ErrFull {
		*err = &DiskFullError{Path: db.Path, Err: *err}
	}
}

// writable returns ErrReadOnly for a database opened with OpenReadOnly.
func (db *DB) writable() error {
	if db.w == nil {
		return fmt.Errorf("%s: %w", db.Path, ErrReadOnly)
	}
	return nil
}
