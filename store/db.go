// Package store keeps recorded runs in one SQLite file: the schema and its
// migrations, the recording API the runtime writes through, and the readers
// the rest of inspect loads runs, nodes and exact request bodies with.
//
// It knows what it stores, not what an agent means: hand-offs, forks and
// joins are rows with payloads here; their semantics live in runtime/ and
// their derived facts in graph/.
package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/inspect-dev/inspect/internal/regfile"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// appID marks a SQLite file as an inspect database (PRAGMA application_id).
const appID = 0x696e7370 // "insp"

// DefaultPath is where runs are kept when neither --db nor INSPECT_DB says otherwise.
const DefaultPath = ".inspect/runs.db"

// DB is an open inspect database. It holds two pools on the same file: a
// single writer connection whose transactions take the write lock up front,
// and a reader pool that never waits on a running writer (WAL).
type DB struct {
	Path string
	// Now returns the current time; tests and scripted runs inject it.
	Now func() time.Time

	w *sql.DB // writer: one connection, _txlock=immediate
	r *sql.DB // readers

	stmts   writeStmts
	raw     rawStmts // the recording statements on the writer's connection (writer.go)
	rawExec rawExec

	// FileVersion is the schema version of the file as found. A reader
	// (OpenReadOnly) of an older file reads an upgraded temporary copy and
	// leaves the file at this version.
	FileVersion int
	// Empty is set on a reader of a file that holds no database yet (an
	// empty file): it reads as no runs, and there is nothing to upgrade.
	Empty   bool
	cleanup func() error // removes a reader's temporary copy
}

// nowFunc is the default DB.Now.
var nowFunc = time.Now

// SchemaError is returned when a file cannot be used as an inspect database:
// it is not SQLite, is another program's database, or is newer than this build.
type SchemaError struct {
	Path   string
	Reason string
	Advice string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("%s: %s; %s", e.Path, e.Reason, e.Advice)
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int {
	return len(migrations())
}

func migrations() []string {
	entries, err := migrationFS.ReadDir("migrations")
	if err != nil {
		panic("internal error: embedded migrations missing: " + err.Error())
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// Open opens (creating if needed) the database at path for writing and
// migrates it to the current schema: the writers' open (inspect run, demo,
// migrate). Readers use OpenReadOnly. A file that is not an inspect
// database, one written by a newer inspect, or one holding schema objects
// inspect did not create is refused with a *SchemaError.
func Open(ctx context.Context, path string) (*DB, error) {
	return open(ctx, path, SchemaVersion())
}

// open migrates to at most version; tests use it to build older files.
func open(ctx context.Context, path string, version int) (*DB, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
	}
	base := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL"
	registerDriver()
	w, err := sql.Open(driverName, base+"&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1) // one writer per process: goroutines queue here instead of on SQLITE_BUSY
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sql.Open(driverName, base+"&mode=rw")
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(4)
	db := &DB{Path: path, Now: time.Now, w: w, r: r}
	if err := db.init(ctx, version); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// driverName is mattn/go-sqlite3 with the SQL functions the migrations use:
// inspect_sha256(blob) returns the SHA-256 of its argument.
const driverName = "sqlite3-inspect"

var registerOnce sync.Once

func registerDriver() {
	registerOnce.Do(func() {
		sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
			return c.RegisterFunc("inspect_sha256", func(b []byte) []byte {
				sum := sha256.Sum256(b)
				return sum[:]
			}, true)
		}})
	})
}

// checkHeader refuses an existing non-empty file that is not SQLite, before
// the driver gets a chance to report a bare "file is not a database".
func checkHeader(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &SchemaError{Path: path, Reason: "a folder, not a database file",
			Advice: fmt.Sprintf("point --db (or INSPECT_DB) at a file, e.g. %s", filepath.Join(path, "runs.db"))}
	}
	f, err := regfile.Open(path) // a FIFO is refused, not waited on
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if errors.Is(err, regfile.ErrNotRegular) {
		return &SchemaError{Path: path, Reason: strings.TrimPrefix(err.Error(), "open "+path+": ") + ", not a database file",
			Advice: "point --db (or INSPECT_DB) at an inspect runs database, or at a new file name"}
	}
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	defer f.Close()
	head := make([]byte, 16)
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil // an empty file becomes a new database
	}
	if !bytes.Equal(head[:n], []byte("SQLite format 3\x00")) {
		return &SchemaError{Path: path, Reason: "not a SQLite database",
			Advice: "point --db (or INSPECT_DB) at an inspect runs database, or at a new file name"}
	}
	return nil
}

func (db *DB) init(ctx context.Context, target int) error {
	var mode string
	if err := db.w.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return db.wrapOpenErr(err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("%s: could not switch to WAL journal mode (got %q); is the file on a network share?", db.Path, mode)
	}
	version, err := db.check(ctx, db.w)
	if err != nil {
		return err
	}
	names := migrations()
	for i := version; i < target && i < len(names); i++ {
		if err := db.migrate(ctx, i+1, names[i]); err != nil {
			return err
		}
	}
	return nil
}

func (db *DB) wrapOpenErr(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrNotADB || se.Code == sqlite3.ErrCorrupt) {
		return &SchemaError{Path: db.Path, Reason: "not a readable SQLite database (" + se.Error() + ")",
			Advice: "point --db (or INSPECT_DB) at an inspect runs database, or at a new file name"}
	}
	if errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrCantOpen || se.Code == sqlite3.ErrPerm) {
		return fmt.Errorf("open %s: %w; inspect needs write access to the file and its folder (SQLite keeps -wal and -shm files next to it, even to read): copy it somewhere writable and point --db there", db.Path, err)
	}
	return fmt.Errorf("open %s: %w", db.Path, err)
}

// migrate applies one migration file in its own transaction and records the version.
func (db *DB) migrate(ctx context.Context, version int, name string) (err error) {
	defer db.full(&err)
	body, err := migrationFS.ReadFile("migrations/" + name)
	if err != nil {
		return err
	}
	// A migration that rebuilds a table runs with foreign keys off (SQLite
	// would cascade the DROP of the old table), on one pinned connection,
	// and checks every key before it commits.
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA foreign_keys = OFF"); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA foreign_keys = ON")
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current); err != nil {
		return err
	}
	if current >= version { // another process migrated it meanwhile
		return nil
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	var broken int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&broken); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	if broken > 0 {
		return fmt.Errorf("migrate %s: %d rows would break a foreign key; the file was left as it was", name, broken)
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d; PRAGMA application_id = %d", version, appID)); err != nil {
		return fmt.Errorf("migrate %s: %w", name, err)
	}
	return tx.Commit()
}

// Version returns the file's schema version.
func (db *DB) Version(ctx context.Context) (int, error) {
	var v int
	err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v)
	return v, err
}

// IntegrityCheck runs PRAGMA integrity_check and returns its verdict ("ok" when sound).
func (db *DB) IntegrityCheck(ctx context.Context) (string, error) {
	rows, err := db.r.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return "", err
		}
		out = append(out, s)
	}
	return strings.Join(out, "\n"), rows.Err()
}

// Close closes both pools.
func (db *DB) Close() error {
	db.closeRaw()
	db.stmts.close()
	var errs []error
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	errs = append(errs, db.r.Close())
	if db.cleanup != nil {
		errs = append(errs, db.cleanup())
	}
	return errors.Join(errs...)
}
