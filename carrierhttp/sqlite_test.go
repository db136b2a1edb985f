package carrierhttp

import (
	"bytes"
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // database/sql driver "sqlite", pure Go
)

// sqliteRows is how many rows newSQLiteDB's table holds: enough that
// sqliteReport, a scan of them all, lasts a few times the carriers' 1 ms
// hand-off threshold (3 to 4 ms here; 50 times that under -race, which
// bounds it: the corpus's slowest request waits for about four of them).
const sqliteRows = 8000

// sqliteCategories is how many categories the rows are spread over, as
// many lines in sqliteReport's answer.
const sqliteCategories = 4

// sqlitePool is how many connections each server's *sql.DB opens at most:
// fewer than the corpus's eight concurrent requests, so that requests wait
// for a pooled connection the Go way (database/sql's connRequests channel).
const sqlitePool = 2

// sqliteReport is the corpus's query (TestBlockingHandlers' "sqlite"): a
// scan of every row, grouped. On carriers each request's run outlasts the
// hand-off threshold, is handed off, and the carrier starts the next
// request, so requests hold both connections and others wait for one: of
// the eight, DB.Stats counted 5 or 6 waits on two carriers and 1 or 2 on
// one (whose requests start a hand-off apart) in six runs here. Without
// the hand-off (HandoffThreshold: -1) this case does not hang: a request
// never yields its carrier while it holds a connection (the rows are read
// whole before the answer is written), so a carrier runs its requests one
// after the other and the pool is never exhausted (0 waits, the same
// answers, in the same six runs). It hangs where a request holds its
// connection across a carrier operation, as a transaction around a call
// to a backend through carrierhttp.Transport does: tried once, every
// request timed out after 10 s with HandoffThreshold -1, on one carrier
// and on two, and all were answered with the hand-off.
const sqliteReport = "SELECT category, count(*), sum(price) FROM items GROUP BY category ORDER BY category"

// sqliteLookup is the benchmark's query: one row by its primary key (an
// indexed SELECT), the ?arg of the request.
const sqliteLookup = "SELECT id, name, price FROM items WHERE id = ?"

// newSQLiteDB creates a database file in t.TempDir() holding the table
// items (id, name, category, price) with sqliteRows rows, and returns its
// path.
func newSQLiteDB(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "items.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, category TEXT NOT NULL, price INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	// One statement makes the rows: id 1 to sqliteRows, named after it,
	// spread over the categories, and priced by a fixed pattern (id*37 mod
	// 1000), so every run reads the same sums.
	const fill = `INSERT INTO items (id, name, category, price)
		WITH RECURSIVE n(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM n WHERE id < ?)
		SELECT id, 'item-' || id, 'c' || (id % ?), id * 37 % 1000 FROM n`
	if _, err := db.Exec(fill, sqliteRows, sqliteCategories); err != nil {
		t.Fatal(err)
	}
	return path
}

// openSQLite opens the database at path as one *sql.DB, pooling at most
// sqlitePool connections, closed when t ends.
func openSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(sqlitePool)
	db.SetMaxIdleConns(sqlitePool)
	t.Cleanup(func() { db.Close() })
	return db
}

// sqliteHandler runs query on db, with the request's ?arg values as its
// arguments, one query per request, and answers the rows it read, one line
// each, their columns separated by spaces. The connection goes back to
// the pool before the answer is written.
func sqliteHandler(db *sql.DB, query string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args []any
		for _, v := range r.URL.Query()["arg"] {
			args = append(args, v)
		}
		body, err := queryLines(r.Context(), db, query, args)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write(body)
	})
}

// queryLines runs query on db and returns its rows, one line each.
func queryLines(ctx context.Context, db *sql.DB, query string, args []any) ([]byte, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var b bytes.Buffer
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.Write(v)
		}
		b.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
