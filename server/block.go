package server

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
)

// The blocking endpoint (Options.BlockingEndpoint): GET /block?kind=K&d=D
// runs a handler that blocks the Go way, as ordinary Go code does, so that
// a load test can measure how well each mode keeps its other requests
// (/health, /fruits) from waiting behind it. Under net/http it costs a
// goroutine; on carriers the run outlasts carrier.Options.HandoffThreshold
// and the carrier hands itself to another thread (carrier/handoff.go),
// which /metrics counts (spindle_carrier_handoffs_total); where hand-off is
// off (serve --handoff-threshold negative) it stalls the carrier, and a
// singleflight follower whose leader waits on the same carrier hangs it. The endpoint is the same code in every mode (answer
// calls it): in handoff mode it runs on the request's offloaded goroutine,
// in the other carrier modes in the connection's task.

// BlockPath is the blocking endpoint's path.
const BlockPath = "/block"

// BlockKinds are the kinds /block takes (kind=), in blockKind's order:
// BlockKinds[k-1] names kind k.
var BlockKinds = []string{"sleep", "mutex", "singleflight", "compute"}

// BlockTarget is the request target of a /block request of kind blocking
// for d.
func BlockTarget(kind string, d time.Duration) string {
	return BlockPath + "?kind=" + kind + "&d=" + d.String()
}

// blockKind is what a /block request blocks on.
type blockKind int

const (
	// blockSleep: time.Sleep(d).
	blockSleep blockKind = iota + 1
	// blockMutex: the server's one mutex, held for d (a sleep under it):
	// concurrent requests queue for it.
	blockMutex
	// blockSingleflight: a golang.org/x/sync/singleflight call shared by
	// the requests with the same d: the first (the leader) sleeps d, then
	// makes the /fruits backend exchange with its mode's backend client;
	// the others (followers) wait for it and answer its result.
	blockSingleflight
	// blockCompute: computes for d without waiting (a CPU-bound handler,
	// which holds its thread as no wait does: the hand-off monitor, not
	// the park watch, must see it).
	blockCompute
)

// blockKinds name the kinds as the query spells them (from BlockKinds).
var blockKinds = func() map[string]blockKind {
	m := make(map[string]blockKind, len(BlockKinds))
	for i, name := range BlockKinds {
		m[name] = blockKind(i + 1)
	}
	return m
}()

// blockKindHelp lists them for errors: "sleep, mutex, singleflight or compute".
var blockKindHelp = strings.Join(BlockKinds[:len(BlockKinds)-1], ", ") + " or " + BlockKinds[len(BlockKinds)-1]

// blockSpec is a parsed /block query.
type blockSpec struct {
	kind blockKind
	d    time.Duration
}

// parseBlock parses a /block query (the target after its '?'): kind is
// required, d (a Go duration with its unit, 0 if absent) must be from 0 to
// maxD, each at most once, and nothing else may be there. maxD is the
// backend timeout: the net/http modes' write deadline, which runs from the
// end of the request head, covers the backend timeout and the write
// timeout, so a longer handler would lose its answer.
func parseBlock(query string, maxD time.Duration) (blockSpec, error) {
	vals, err := url.ParseQuery(query)
	if err != nil {
		return blockSpec{}, fmt.Errorf("query %q: %v", query, err)
	}
	keys := slices.Sorted(maps.Keys(vals)) // the first problem is always the same one
	for _, key := range keys {
		if key != "kind" && key != "d" {
			return blockSpec{}, fmt.Errorf("parameter %q: unknown (want kind and d)", key)
		}
		if n := len(vals[key]); n > 1 {
			return blockSpec{}, fmt.Errorf("%s given %d times: give it once", key, n)
		}
	}
	var b blockSpec
	if !vals.Has("kind") {
		return blockSpec{}, fmt.Errorf("kind missing: want kind=%s", blockKindHelp)
	}
	v := vals.Get("kind")
	k, ok := blockKinds[v]
	if !ok {
		return blockSpec{}, fmt.Errorf("kind %q: want %s", v, blockKindHelp)
	}
	b.kind = k
	if vals.Has("d") {
		v := vals.Get("d")
		d, err := time.ParseDuration(v)
		if err != nil {
			return blockSpec{}, fmt.Errorf("d %q: want a duration with its unit, such as 20ms", v)
		}
		if d < 0 || d > maxD {
			return blockSpec{}, fmt.Errorf("d %q: want 0 to %v (the backend timeout)", v, maxD)
		}
		b.d = d
	}
	return b, nil
}

// blockQuery returns the query of a /block target (what follows its first
// '?'), and "" for any other route: only /block reads its query, so the
// others pay nothing for it.
func blockQuery[T string | []byte](r route, target T) string {
	if r != routeBlock {
		return ""
	}
	_, q, _ := strings.Cut(string(target), "?")
	return q
}

// flight is the result a singleflight leader shares with its followers:
// the /fruits answer.
type flight struct {
	status int
	ctype  string
	body   []byte
}

// block answers a /block request with query q; fetch is the request's
// backend exchange (the singleflight leader's). A bad query is answered 400
// with the reason, and the connection stays open.
func (s *Server) block(q string, fetch func() ([]byte, error)) (status int, ctype string, body []byte) {
	b, err := parseBlock(q, s.o.BackendTimeout)
	if err != nil {
		return 400, textPlain, []byte("bad /block query: " + err.Error())
	}
	switch b.kind {
	case blockSleep:
		time.Sleep(b.d)
	case blockMutex:
		s.blockMu.Lock()
		time.Sleep(b.d)
		s.blockMu.Unlock()
	case blockSingleflight:
		return s.singleflight(b.d, fetch)
	case blockCompute:
		compute(b.d)
	}
	return 200, textPlain, healthBody
}

// compute keeps its thread busy for d: a loop of clock reads, no wait.
func compute(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// unavailableBody answers a singleflight follower whose leader's carrier
// stopped (the server closes) before the shared call ended.
var unavailableBody = []byte("Service Unavailable")

// singleflight answers a /block?kind=singleflight request: the leader
// sleeps d, then makes the backend exchange; followers with the same d wait
// for it and answer its result.
//
// The leader runs the call in its own goroutine or task (Do, not DoChan,
// which would start a goroutine: on carriers the backend exchange must run
// in the leader's task to be polled by its carrier). fruits copies nothing
// from fetch's buffer: transform allocates the body every follower writes.
//
// singleflight recovers a panic in the call and raises it again, wrapped
// in its own error type, in the leader and in every follower. A carrier
// that stops while the leader is parked in its exchange unwinds the
// leader's task with a panic of its own (carrier.IsStop), which must reach
// the carrier as itself: the leader raises it unwrapped, and a follower,
// whose own task is not being stopped, answers 503 instead of panicking.
func (s *Server) singleflight(d time.Duration, fetch func() ([]byte, error)) (status int, ctype string, body []byte) {
	leader := false
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if err, ok := p.(error); ok {
			if stop := errors.Unwrap(err); stop != nil && carrier.IsStop(stop) {
				if leader {
					panic(stop)
				}
				status, ctype, body = 503, textPlain, unavailableBody
				return
			}
		}
		panic(p)
	}()
	v, _, _ := s.flights.Do(d.String(), func() (any, error) {
		leader = true
		time.Sleep(d)
		st, ct, out := s.fruits(fetch())
		return flight{st, ct, out}, nil
	})
	f := v.(flight)
	return f.status, f.ctype, f.body
}
