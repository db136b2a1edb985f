// Package tfb serves the TechEmpower Framework Benchmarks' six test types
// (https://www.techempower.com/benchmarks/, "Test types" in the project's
// wiki) on a pgxpool.Pool, computed once (Answers) and served either as
// one ordinary net/http handler (New, NewPools), so that the same code can
// be measured under net/http's server and on carriers
// (carrierhttp.Server), or from spindle's own HTTP/1 handler on carriers
// (spindle serve's carrier mode): /json, /plaintext, /db, /queries?queries=N,
// /fortunes and /updates?queries=N, on PostgreSQL tables World (10,000
// rows) and Fortune (the 12 standard fortunes) that Setup makes.
//
// It follows the published requirements as TechEmpower's verifier checks
// them (toolset/test_types in TechEmpower/FrameworkBenchmarks):
//
//   - every answer carries Server, Date (set by the server, never cached),
//     Content-Type and Content-Length;
//   - /json answers {"message":"Hello, World!"} (application/json), an
//     object made and serialized per request; /plaintext answers
//     "Hello, World!" (text/plain);
//   - /db reads one World row of a random id in 1..10000 and answers it as
//     {"id":N,"randomNumber":M}; nothing is cached;
//   - /queries reads N rows, each by its own query of a random id (no IN
//     list, no join), and answers a JSON array of them, N being the
//     queries parameter clamped to 1..500; a missing, empty or
//     non-numeric value counts as 1;
//   - /fortunes reads every Fortune row, adds {0, "Additional fortune added
//     at request time."}, sorts them by message and renders them with
//     html/template, which escapes them (text/html; charset=utf-8);
//   - /updates reads N rows as /queries does, gives each a new random
//     number in 1..10000, writes them back in one batch of UPDATE
//     statements (which the rules allow) and answers the new values.
//
// Statements go through pgx's default statement cache (each is prepared
// on a connection at its first use). An error of the database answers 500
// and the server goes on serving.
package tfb

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/spindle-lab/spindle/http1"
)

// ServerName is the Server header of every answer.
const ServerName = "spindle"

// The tables' sizes and the queries parameter's range, TechEmpower's.
const (
	// WorldRows is how many rows World has: ids 1..WorldRows, and random
	// numbers in the same range.
	WorldRows = 10000
	// MinQueries and MaxQueries bound the queries parameter of /queries
	// and /updates.
	MinQueries = 1
	MaxQueries = 500
)

// The answers' content types.
const (
	contentJSON = "application/json"
	contentText = "text/plain"
	contentHTML = "text/html; charset=utf-8"
	// contentError is the content type of 404, 405 and 500 answers (as
	// net/http's http.Error sets it).
	contentError = "text/plain; charset=utf-8"
)

// The statements, in lower case as PostgreSQL folds the unquoted names
// TechEmpower's schema uses.
const (
	selectWorld    = "SELECT id, randomnumber FROM world WHERE id = $1"
	updateWorld    = "UPDATE world SET randomnumber = $2 WHERE id = $1"
	selectFortunes = "SELECT id, message FROM fortune"
)

// helloWorld is the message of /json and the body of /plaintext.
const helloWorld = "Hello, World!"

// plaintextBody is /plaintext's answer, shared: servers only read it.
var plaintextBody = []byte(helloWorld)

// additionalFortune is the row /fortunes adds to the table's at request
// time, with id 0.
const additionalFortune = "Additional fortune added at request time."

// World is a row of the table World, as /db, /queries and /updates answer it.
type World struct {
	ID           int32 `json:"id"`
	RandomNumber int32 `json:"randomNumber"`
}

// Fortune is a row of the table Fortune.
type Fortune struct {
	ID      int32
	Message string
}

// message is /json's object, made per request as the rules ask.
type message struct {
	Message string `json:"message"`
}

// fortunesTemplate is TechEmpower's fortunes page; html/template escapes
// each message for its place in the page. Parsing a constant cannot fail
// but for a mistake in it, which TestFortunes would show.
var fortunesTemplate = template.Must(template.New("fortunes").Parse(`<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table><tr><th>id</th><th>message</th></tr>{{range .}}<tr><td>{{.ID}}</td><td>{{.Message}}</td></tr>{{end}}</table></body></html>`))

// An Answer is what a request gets: a status, a content type and a body.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
	Allow       string // the Allow header: a 405's methods; empty: none
}

// Fill makes rep the answer, for spindle's own HTTP/1 handler (package
// http1), which adds the Server header the rules want from its Options.
func (a Answer) Fill(rep *http1.Reply) {
	rep.Status, rep.ContentType, rep.Body, rep.Allow = a.Status, a.ContentType, a.Body, a.Allow
}

// Answers computes the six test types' answers, for any server: NewPools
// wraps them in a net/http handler, and spindle serve's carrier mode calls
// Answer from spindle's own HTTP/1 handler (package http1), whose answers
// carry Server, Date, Content-Type and Content-Length as well. It reads
// and writes the tables through the pool poolFor gives a request's
// context. It is safe for concurrent use.
type Answers struct {
	poolFor func(context.Context) *pgxpool.Pool
}

// NewAnswers returns the answers on the pools poolFor picks.
func NewAnswers(poolFor func(context.Context) *pgxpool.Pool) *Answers {
	return &Answers{poolFor: poolFor}
}

// paths are the six test types' paths.
var paths = []string{"/json", "/plaintext", "/db", "/queries", "/fortunes", "/updates"}

// The bodies of 404 and 405 answers, shared as plaintextBody is.
var (
	notFoundBody         = []byte("404 page not found\n")
	methodNotAllowedBody = []byte("405 method not allowed\n")
)

// allowed is the methods every test type serves, a 405's Allow header.
const allowed = "GET, HEAD"

// Answer answers a request of method for path with the query string
// rawQuery (the target's part after '?'): 404 for a path that is none of
// the six, 405 for a method other than GET or HEAD, 500 with the error's
// text when the database fails.
func (a *Answers) Answer(ctx context.Context, method, path, rawQuery string) Answer {
	if !slices.Contains(paths, path) {
		return Answer{Status: http.StatusNotFound, ContentType: contentError, Body: notFoundBody}
	}
	if method != http.MethodGet && method != http.MethodHead {
		return Answer{Status: http.StatusMethodNotAllowed, ContentType: contentError, Body: methodNotAllowedBody, Allow: allowed}
	}
	var v any
	var err error
	switch path {
	case "/json":
		v = message{Message: helloWorld}
	case "/plaintext":
		return Answer{Status: http.StatusOK, ContentType: contentText, Body: plaintextBody}
	case "/db":
		var wd World
		err = a.poolFor(ctx).QueryRow(ctx, selectWorld, randomID()).Scan(&wd.ID, &wd.RandomNumber)
		v = wd
	case "/queries":
		v, err = a.readWorlds(ctx, queriesOf(rawQuery))
	case "/fortunes":
		return a.fortunes(ctx)
	case "/updates":
		v, err = a.updates(ctx, queriesOf(rawQuery))
	}
	if err != nil {
		return failed(fmt.Errorf("tfb: %s: %w", path, err))
	}
	b, err := json.Marshal(v)
	if err != nil {
		return failed(fmt.Errorf("tfb: %s: encode %T: %w", path, v, err))
	}
	return Answer{Status: http.StatusOK, ContentType: contentJSON, Body: b}
}

// New returns the six test types as a net/http handler, reading and
// writing the tables Setup made through pool. It is safe for concurrent
// use.
func New(pool *pgxpool.Pool) http.Handler {
	return NewPools(func(context.Context) *pgxpool.Pool { return pool })
}

// NewPools is New with a pool per request: poolFor picks it from the
// request's context. On carriers, one pool per carrier whose conns its
// carrier polls (carrier.PerCarrier's Get, each pool dialling with its
// carrier's DialContext) keeps each request's queries on its own carrier.
func NewPools(poolFor func(context.Context) *pgxpool.Pool) http.Handler {
	a := NewAnswers(poolFor)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ans := a.Answer(r.Context(), r.Method, r.URL.Path, r.URL.RawQuery)
		hd := w.Header()
		hd.Set("Server", ServerName)
		hd.Set("Content-Type", ans.ContentType)
		hd.Set("Content-Length", strconv.Itoa(len(ans.Body)))
		if ans.Allow != "" {
			hd.Set("Allow", ans.Allow)
		}
		w.WriteHeader(ans.Status)
		w.Write(ans.Body)
	})
}

// queriesOf is the number of rows the queries parameter of rawQuery asks
// for (parseQueries; MinQueries when it has none or does not parse).
func queriesOf(rawQuery string) int {
	q, _ := url.ParseQuery(rawQuery) // what parsed before an error is kept
	return parseQueries(q.Get("queries"))
}

// fortunes answers /fortunes.
func (a *Answers) fortunes(ctx context.Context) Answer {
	fortunes, err := a.readFortunes(ctx)
	if err != nil {
		return failed(fmt.Errorf("tfb: /fortunes: %w", err))
	}
	fortunes = append(fortunes, Fortune{ID: 0, Message: additionalFortune})
	slices.SortFunc(fortunes, func(a, b Fortune) int { return cmp.Compare(a.Message, b.Message) })
	var b bytes.Buffer
	if err := fortunesTemplate.Execute(&b, fortunes); err != nil {
		return failed(fmt.Errorf("tfb: /fortunes: render: %w", err))
	}
	return Answer{Status: http.StatusOK, ContentType: contentHTML, Body: b.Bytes()}
}

// updates reads n rows as /queries does, gives each a new random number
// and writes them back.
func (a *Answers) updates(ctx context.Context, n int) ([]World, error) {
	worlds, err := a.readWorlds(ctx, n)
	if err != nil {
		return nil, err
	}
	for i := range worlds {
		worlds[i].RandomNumber = randomID()
	}
	if err := a.writeWorlds(ctx, worlds); err != nil {
		return nil, err
	}
	return worlds, nil
}

// readWorlds reads n rows of random ids, one query each, on one
// connection of the pool.
func (a *Answers) readWorlds(ctx context.Context, n int) ([]World, error) {
	conn, err := a.poolFor(ctx).Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("acquire a connection: %w", err)
	}
	defer conn.Release()
	worlds := make([]World, n)
	for i := range worlds {
		if err := conn.QueryRow(ctx, selectWorld, randomID()).Scan(&worlds[i].ID, &worlds[i].RandomNumber); err != nil {
			return nil, fmt.Errorf("read world %d of %d: %w", i+1, n, err)
		}
	}
	return worlds, nil
}

// writeWorlds writes the random numbers of worlds back in one batch of
// UPDATE statements, sent together and run in one implicit transaction.
// The statements go in the order of the ids, so that concurrent batches
// lock their rows in the same order and cannot deadlock. An id drawn more
// than once in worlds is written once, with the number of its last
// occurrence, which all its occurrences then answer: the answer shows
// what the table holds.
func (a *Answers) writeWorlds(ctx context.Context, worlds []World) error {
	order := make([]int, len(worlds)) // indices of worlds by id, stably
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(worlds[a].ID, worlds[b].ID) })
	var batch pgx.Batch
	for i := 0; i < len(order); {
		j := i + 1 // order[i:j] share an id
		for j < len(order) && worlds[order[j]].ID == worlds[order[i]].ID {
			j++
		}
		last := worlds[order[j-1]]
		for _, k := range order[i:j] {
			worlds[k].RandomNumber = last.RandomNumber
		}
		batch.Queue(updateWorld, last.ID, last.RandomNumber)
		i = j
	}
	if err := a.poolFor(ctx).SendBatch(ctx, &batch).Close(); err != nil {
		return fmt.Errorf("update %d worlds: %w", batch.Len(), err)
	}
	return nil
}

// readFortunes reads every row of Fortune.
func (a *Answers) readFortunes(ctx context.Context) ([]Fortune, error) {
	rows, err := a.poolFor(ctx).Query(ctx, selectFortunes)
	if err != nil {
		return nil, fmt.Errorf("query fortunes: %w", err)
	}
	fortunes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Fortune, error) {
		var f Fortune
		err := row.Scan(&f.ID, &f.Message)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("read fortunes: %w", err)
	}
	return fortunes, nil
}

// parseQueries is the number of rows a queries parameter asks for: its
// decimal value (an optional sign, then digits) clamped to
// MinQueries..MaxQueries, however many digits it has; anything else
// (empty, "foo", "1.5", " 2", "9A") counts as MinQueries, as
// TechEmpower's verifier expects. (strconv.Atoi does not do: past an
// int's range it reports ErrRange before it looks at the rest.)
func parseQueries(s string) int {
	digits := s
	negative := false
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		negative, digits = digits[0] == '-', digits[1:]
	}
	if digits == "" {
		return MinQueries
	}
	n := 0
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return MinQueries
		}
		if n <= MaxQueries { // past MaxQueries the value is clamped anyway: no overflow
			n = n*10 + int(c-'0')
		}
	}
	if negative {
		return MinQueries
	}
	return min(max(n, MinQueries), MaxQueries)
}

// randomID is a random World id, and a random number for a World row:
// uniform in 1..WorldRows.
func randomID() int32 { return rand.Int32N(WorldRows) + 1 }

// failed answers 500 with err's text, as http.Error does.
func failed(err error) Answer {
	return Answer{Status: http.StatusInternalServerError, ContentType: contentError, Body: []byte(err.Error() + "\n")}
}
