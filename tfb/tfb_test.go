package tfb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spindle-lab/spindle/internal/testsvc"
)

// requestTimeout bounds each request of the tests: a hang fails, never
// waits for go test's timeout.
const requestTimeout = 20 * time.Second

// fetch GETs url and returns the body, failing t unless the answer has
// status, TechEmpower's headers (Server, a Date in HTTP's format,
// Content-Type contentType, a Content-Length that is the body's length)
// and is not chunked.
func fetch(t *testing.T, c *http.Client, url string, status int, contentType string) []byte {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("GET %s: read the body: %v", url, err)
	}
	if resp.StatusCode != status {
		t.Fatalf("GET %s: status %d, want %d: %s", url, resp.StatusCode, status, body)
	}
	if got := resp.Header.Get("Server"); got != ServerName {
		t.Errorf("GET %s: Server %q, want %q", url, got, ServerName)
	}
	if _, err := http.ParseTime(resp.Header.Get("Date")); err != nil {
		t.Errorf("GET %s: Date %q: %v", url, resp.Header.Get("Date"), err)
	}
	if got := resp.Header.Get("Content-Type"); contentType != "" && got != contentType {
		t.Errorf("GET %s: Content-Type %q, want %q", url, got, contentType)
	}
	if cl := resp.Header.Get("Content-Length"); cl != strconv.Itoa(len(body)) || len(resp.TransferEncoding) > 0 {
		t.Errorf("GET %s: Content-Length %q, Transfer-Encoding %q, body of %d bytes", url, cl, resp.TransferEncoding, len(body))
	}
	return body
}

// A verifyCase is one request of the verifier and its checks: check gets
// the database and do, which makes the request, checks its status and
// headers, and returns the body.
type verifyCase struct {
	name, path  string
	status      int // 0: 200
	contentType string
	check       func(t *testing.T, pool *pgxpool.Pool, do func() []byte)
}

// queriesCases are the queries parameters the verifier sends to /queries
// and /updates, TechEmpower's and a few more, with the rows each asks for.
var queriesCases = []struct {
	query string // the URL's query: "" sends none
	rows  int
}{
	{"", 1},
	{"?queries=", 1},
	{"?queries=0", 1},
	{"?queries=1", 1},
	{"?queries=2", 2},
	{"?queries=20", 20},
	{"?queries=500", 500},
	{"?queries=501", 500},
	{"?queries=-3", 1},
	{"?queries=foo", 1},
	{"?queries=1.5", 1},
	{"?queries=99999999999999999999", 500},
}

// verifyCases is the verifier's table: every test type, the queries
// parameter's clamping for both /queries and /updates, and a path that is
// not a test type.
func verifyCases() []verifyCase {
	cases := []verifyCase{
		{name: "json", path: "/json", contentType: contentJSON, check: checkJSON},
		{name: "plaintext", path: "/plaintext", contentType: contentText, check: checkPlaintext},
		{name: "db", path: "/db", contentType: contentJSON, check: checkDB},
		{name: "fortunes", path: "/fortunes", contentType: contentHTML, check: checkFortunes},
		{name: "notfound", path: "/nope", status: http.StatusNotFound, check: func(t *testing.T, _ *pgxpool.Pool, do func() []byte) { do() }},
	}
	for _, q := range queriesCases {
		cases = append(cases,
			verifyCase{name: "queries" + q.query, path: "/queries" + q.query, contentType: contentJSON, check: checkQueries(q.rows)},
			verifyCase{name: "updates" + q.query, path: "/updates" + q.query, contentType: contentJSON, check: checkUpdates(q.rows)})
	}
	return cases
}

// TestVerify runs the verifier's table against net/http's server and
// carrierhttp's on one and two carriers, with the pool's own conns and
// with a pool per carrier of carrier conns ("polled"), and against
// Answers from spindle's own HTTP/1 handler on carriers ("native", as
// spindle serve's carrier mode), and checks that the Date is not cached.
func TestVerify(t *testing.T) {
	pool := testsvc.PgxPool(t, checkLeaks(t), 4)
	h := New(pool)
	dsn := testDSN(t)
	for _, s := range append(sides, side{"polled1", 1}, side{"polled2", 2}, side{"native1", 1}, side{"native2", 2}) {
		t.Run(s.name, func(t *testing.T) {
			var base string
			switch {
			case strings.HasPrefix(s.name, "polled"): // pgx over carrier conns, a pool per carrier
				base, _ = servePolled(t, dsn, s.carriers, 2)
			case strings.HasPrefix(s.name, "native"): // the same, from spindle's own HTTP/1 handler
				base = serveNative(t, dsn, s.carriers, 2)
			default:
				base, _ = s.serve(t, h)
			}
			c := newClient(t, 1, requestTimeout)
			for _, vc := range verifyCases() {
				t.Run(vc.name, func(t *testing.T) {
					status := cmp.Or(vc.status, http.StatusOK)
					vc.check(t, pool, func() []byte { return fetch(t, c, base+vc.path, status, vc.contentType) })
				})
			}
			t.Run("method", func(t *testing.T) {
				// A 405 lists the methods the target serves (RFC 9110
				// 15.5.6), and carries the headers every answer has.
				resp, err := c.Post(base+"/db", "text/plain", strings.NewReader("x"))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != allowed ||
					resp.Header.Get("Server") != ServerName || resp.Header.Get("Date") == "" {
					t.Errorf("POST /db: %d, Allow %q, Server %q, Date %q; want 405, %q, %q and a date", resp.StatusCode,
						resp.Header.Get("Allow"), resp.Header.Get("Server"), resp.Header.Get("Date"), allowed, ServerName)
				}
			})
			t.Run("date", func(t *testing.T) {
				// The Date is rendered once a second: two answers more
				// than a second apart differ, as TechEmpower's verifier
				// checks with three.
				date := func() string {
					resp, err := c.Get(base + "/plaintext")
					if err != nil {
						t.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					return resp.Header.Get("Date")
				}
				d1 := date()
				time.Sleep(1100 * time.Millisecond)
				if d2 := date(); d1 == d2 {
					t.Errorf("Date %q both times, 1.1 s apart", d1)
				}
			})
		})
	}
}

func checkJSON(t *testing.T, _ *pgxpool.Pool, do func() []byte) {
	body := do()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if len(m) != 1 || m["message"] != "Hello, World!" {
		t.Errorf("answered %s, want {\"message\":\"Hello, World!\"}", body)
	}
	if string(body) != `{"message":"Hello, World!"}` {
		t.Errorf("answered %q: more bytes than the object", body)
	}
}

func checkPlaintext(t *testing.T, _ *pgxpool.Pool, do func() []byte) {
	if body := do(); string(body) != "Hello, World!" {
		t.Errorf("answered %q", body)
	}
}

func checkDB(t *testing.T, pool *pgxpool.Pool, do func() []byte) {
	body := do()
	if !bytes.HasPrefix(body, []byte("{")) {
		t.Fatalf("answered %s: not an object", body)
	}
	w := decodeWorld(t, body)
	checkTable(t, pool, []World{w})
}

// checkQueries checks a /queries answer of rows rows: a JSON array of
// World objects in range, each as the table has it.
func checkQueries(rows int) func(t *testing.T, pool *pgxpool.Pool, do func() []byte) {
	return func(t *testing.T, pool *pgxpool.Pool, do func() []byte) {
		worlds := decodeWorlds(t, do(), rows)
		checkTable(t, pool, worlds)
	}
}

// checkUpdates checks an /updates answer of rows rows as checkQueries
// does (the table holds the answered numbers), that an id answered twice
// has one number, and that the rows answered, and only those, changed:
// all of them but for the one in WorldRows whose new number is its old.
func checkUpdates(rows int) func(t *testing.T, pool *pgxpool.Pool, do func() []byte) {
	return func(t *testing.T, pool *pgxpool.Pool, do func() []byte) {
		before := readTable(t, pool)
		worlds := decodeWorlds(t, do(), rows)
		after := readTable(t, pool)
		checkTable(t, pool, worlds)
		answered := map[int32]int32{}
		for _, w := range worlds {
			if n, ok := answered[w.ID]; ok && n != w.RandomNumber {
				t.Errorf("id %d answered with %d and %d", w.ID, n, w.RandomNumber)
			}
			answered[w.ID] = w.RandomNumber
		}
		changed := 0
		for id, n := range after {
			if n == before[id] {
				continue
			}
			changed++
			if _, ok := answered[id]; !ok {
				t.Errorf("id %d changed from %d to %d but was not answered", id, before[id], n)
			}
		}
		// TechEmpower's verifier fails fewer than 90% changed; a new
		// number equals the old one once in WorldRows draws.
		if want := len(answered) * 9 / 10; changed < want || changed == 0 {
			t.Errorf("%d rows changed of %d updated", changed, len(answered))
		}
	}
}

// fortunesOrder is the ids of TechEmpower's valid fortunes page, in its
// order (toolset/test_types/fortune/fortune_html_parser.py), the added
// fortune being 0.
var fortunesOrder = []int32{11, 4, 5, 2, 8, 0, 3, 7, 10, 6, 9, 1, 12}

// The fortunes page's frame, and a row of it.
const (
	fortunesHead = `<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>`
	fortunesTail = `</table></body></html>`
)

var fortuneRow = regexp.MustCompile(`<tr><td>([0-9]+)</td><td>([^<]*)</td></tr>`)

func checkFortunes(t *testing.T, _ *pgxpool.Pool, do func() []byte) {
	body := string(do())
	rows, ok := strings.CutPrefix(body, fortunesHead)
	if ok {
		rows, ok = strings.CutSuffix(rows, fortunesTail)
	}
	if !ok {
		t.Fatalf("not the fortunes page's frame:\n%s", body)
	}
	if left := fortuneRow.ReplaceAllString(rows, ""); left != "" {
		t.Errorf("the table holds more than rows: %q", left)
	}
	messages := map[int32]string{0: additionalFortune}
	for _, f := range Fortunes {
		messages[f.ID] = f.Message
	}
	var ids []int32
	var texts []string
	for _, m := range fortuneRow.FindAllStringSubmatch(rows, -1) {
		id, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, int32(id))
		text := html.UnescapeString(m[2])
		texts = append(texts, text)
		if text != messages[int32(id)] {
			t.Errorf("fortune %d is %q, want %q", id, text, messages[int32(id)])
		}
	}
	if !slices.Equal(ids, fortunesOrder) {
		t.Errorf("fortunes in the order %v, want %v", ids, fortunesOrder)
	}
	if !slices.IsSorted(texts) {
		t.Errorf("messages not sorted: %q", texts)
	}
	// Markup comes out escaped; UTF-8 text comes out as it is.
	for _, want := range []string{
		`&lt;script&gt;alert(&#34;This should not be displayed in a browser alert box.&#34;);&lt;/script&gt;`,
		`aren&#39;t broken.`,
		`フレームワークのベンチマーク`,
		`UNIX. — Tom Christaensen`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q:\n%s", want, body)
		}
	}
}

// decodeWorld decodes a World object: exactly the keys id and
// randomNumber, integers in 1..WorldRows.
func decodeWorld(t *testing.T, b []byte) World {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	field := func(key string) int32 {
		n, err := strconv.Atoi(string(m[key]))
		if err != nil || n < 1 || n > WorldRows {
			t.Fatalf("%s: %s is %q, want an integer in 1..%d", b, key, m[key], WorldRows)
		}
		return int32(n)
	}
	w := World{ID: field("id"), RandomNumber: field("randomNumber")}
	if len(m) != 2 {
		t.Errorf("%s: keys other than id and randomNumber", b)
	}
	return w
}

// decodeWorlds decodes a JSON array of n World objects.
func decodeWorlds(t *testing.T, b []byte, n int) []World {
	t.Helper()
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatalf("%.200s: %v (want an array)", b, err)
	}
	if len(raw) != n {
		t.Fatalf("%d objects, want %d", len(raw), n)
	}
	worlds := make([]World, n)
	for i, r := range raw {
		worlds[i] = decodeWorld(t, r)
	}
	return worlds
}

// checkTable checks that the table holds each of worlds' numbers.
func checkTable(t *testing.T, pool *pgxpool.Pool, worlds []World) {
	t.Helper()
	table := readTable(t, pool)
	for _, w := range worlds {
		if got := table[w.ID]; got != w.RandomNumber {
			t.Errorf("id %d answered %d, the table holds %d", w.ID, w.RandomNumber, got)
		}
	}
}

// readTable returns World's rows, number by id.
func readTable(t *testing.T, pool *pgxpool.Pool) map[int32]int32 {
	t.Helper()
	rows, err := pool.Query(context.Background(), "SELECT id, randomnumber FROM world")
	if err != nil {
		t.Fatal(err)
	}
	table := map[int32]int32{}
	var id, n int32
	if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error { table[id] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return table
}

// TestSetup makes the tables in a database of their own, twice: the
// second Setup changes nothing, and the tables hold TechEmpower's rows.
func TestSetup(t *testing.T) {
	ctx := context.Background()
	admin := testsvc.PgxPool(t, checkLeaks(t), 1)
	const db = "tfb_setup"
	for _, stmt := range []string{"DROP DATABASE IF EXISTS " + db, "CREATE DATABASE " + db} {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := pgxpool.ParseConfig(admin.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Database = db
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := Setup(ctx, pool); err != nil {
		t.Fatal(err)
	}
	first := readTable(t, pool)
	if err := Setup(ctx, pool); err != nil {
		t.Fatalf("second setup: %v", err)
	}
	second := readTable(t, pool)
	if len(first) != WorldRows {
		t.Errorf("world has %d rows, want %d", len(first), WorldRows)
	}
	for id := int32(1); id <= WorldRows; id++ {
		n, ok := first[id]
		if !ok || n < 1 || n > WorldRows {
			t.Fatalf("world %d: %d (present %v), want a number in 1..%d", id, n, ok, WorldRows)
		}
		if second[id] != n {
			t.Fatalf("world %d: %d after the second setup, %d before", id, second[id], n)
		}
	}
	rows, err := pool.Query(ctx, "SELECT id, message FROM fortune ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Fortune])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, Fortunes) {
		t.Errorf("fortune holds %q, want %q", got, Fortunes)
	}
}

// TestDatabaseDown serves from a closed pool: the database's test types
// answer 500, and the server goes on serving the others on the same
// connection.
func TestDatabaseDown(t *testing.T) {
	pool := testsvc.PgxPool(t, checkLeaks(t), 1)
	pool.Close()
	h := New(pool)
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			base, _ := s.serve(t, h)
			c := newClient(t, 1, requestTimeout)
			for _, path := range []string{"/db", "/queries?queries=3", "/fortunes", "/updates?queries=3"} {
				if body := fetch(t, c, base+path, http.StatusInternalServerError, ""); !bytes.Contains(body, []byte("closed")) {
					t.Errorf("GET %s: %q, want the pool's error", path, body)
				}
				checkJSON(t, nil, func() []byte { return fetch(t, c, base+"/json", http.StatusOK, contentJSON) })
			}
		})
	}
}

// concurrentPaths are the requests TestConcurrentClients mixes, each with
// the first byte of its answer.
var concurrentPaths = []struct {
	path  string
	first byte
}{
	{"/json", '{'}, {"/plaintext", 'H'}, {"/db", '{'}, {"/queries?queries=5", '['},
	{"/fortunes", '<'}, {"/updates?queries=5", '['}, {"/updates?queries=20", '['},
}

// TestConcurrentClients sends clients×perClient requests mixed over the
// test types, from clients goroutines on keep-alive connections, to each
// server: every answer is 200 and well-formed, and all come within
// loadBound.
func TestConcurrentClients(t *testing.T) {
	const (
		clients   = 16
		perClient = 50
		loadBound = 90 * time.Second // about 5 s here under -race
	)
	pool := testsvc.PgxPool(t, checkLeaks(t), 8)
	h := New(pool)
	for _, s := range sides {
		t.Run(s.name, func(t *testing.T) {
			base, g := s.serve(t, h)
			c := newClient(t, clients, requestTimeout)
			errs := make(chan error, clients*perClient)
			var wg sync.WaitGroup
			start := time.Now()
			for i := range clients {
				wg.Go(func() {
					for j := range perClient {
						p := concurrentPaths[(i+j)%len(concurrentPaths)]
						if err := getOK(c, base+p.path, p.first); err != nil {
							errs <- err
						}
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(loadBound):
				t.Fatalf("%d×%d requests not answered within %v: a hang", clients, perClient, loadBound)
			}
			close(errs)
			n := 0
			for err := range errs {
				if n++; n <= 5 {
					t.Error(err)
				}
			}
			if n > 0 {
				t.Errorf("%d of %d requests failed", n, clients*perClient)
			}
			handoffs := uint64(0)
			if g != nil {
				for _, tm := range g.Snapshot() {
					handoffs += tm.Handoffs
				}
			}
			t.Logf("%d requests in %v, %d hand-offs", clients*perClient, time.Since(start).Round(time.Millisecond), handoffs)
		})
	}
}

// getOK GETs url and wants 200, a body starting with first and a
// Content-Length.
func getOK(c *http.Client, url string, first byte) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return fmt.Errorf("GET %s: %w", url, err)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("GET %s: status %d: %s", url, resp.StatusCode, body)
	case len(body) == 0 || body[0] != first:
		return fmt.Errorf("GET %s: answered %.100q", url, body)
	case resp.ContentLength != int64(len(body)):
		return fmt.Errorf("GET %s: Content-Length %d, body of %d bytes", url, resp.ContentLength, len(body))
	}
	return nil
}

// TestAnswerRoutes: the answers that need no database, for every method
// and a few paths that are no test type.
func TestAnswerRoutes(t *testing.T) {
	a := NewAnswers(func(context.Context) *pgxpool.Pool {
		t.Error("a database was asked for")
		return nil
	})
	for _, tc := range []struct {
		method, path, query string
		status              int
		contentType, body   string
		allow               string
	}{
		{"GET", "/plaintext", "", 200, contentText, helloWorld, ""},
		{"HEAD", "/plaintext", "", 200, contentText, helloWorld, ""},
		{"GET", "/json", "queries=3", 200, contentJSON, `{"message":"Hello, World!"}`, ""},
		{"POST", "/json", "", 405, contentError, "405 method not allowed\n", "GET, HEAD"},
		{"DELETE", "/db", "", 405, contentError, "405 method not allowed\n", "GET, HEAD"},
		{"GET", "/", "", 404, contentError, "404 page not found\n", ""},
		{"GET", "/json/", "", 404, contentError, "404 page not found\n", ""},
		{"GET", "/JSON", "", 404, contentError, "404 page not found\n", ""},
		{"POST", "/nope", "", 404, contentError, "404 page not found\n", ""},
	} {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			got := a.Answer(context.Background(), tc.method, tc.path, tc.query)
			if got.Status != tc.status || got.ContentType != tc.contentType || string(got.Body) != tc.body || got.Allow != tc.allow {
				t.Errorf("Answer(%s %s?%s) = %d %q %q Allow %q; want %d %q %q Allow %q", tc.method, tc.path, tc.query,
					got.Status, got.ContentType, got.Body, got.Allow, tc.status, tc.contentType, tc.body, tc.allow)
			}
		})
	}
}
