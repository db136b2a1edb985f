package main

import (
	"time"

	"github.com/spindle-lab/spindle/http1"
)

// connArgs are the connection limits and timeouts serve and mock share.
type connArgs struct {
	http     http1.Options
	maxConns int
}

// connFlags adds --max-conns and the timeout flags to fs, with http1's
// defaults.
func connFlags(fs *flagSet, a *connArgs) {
	fs.IntVar(&a.maxConns, "max-conns", 0, "client connections open at once; one beyond is accepted and closed at once (0: no bound)")
	fs.durationVar(&a.http.ReadHeaderTimeout, "read-header-timeout", http1.DefaultReadHeaderTimeout,
		"time from a request's first byte (a new connection's accept) to the end of its head")
	fs.durationVar(&a.http.ReadTimeout, "read-timeout", http1.DefaultReadTimeout,
		"time from the same start to the end of the whole request, body included")
	fs.durationVar(&a.http.WriteTimeout, "write-timeout", http1.DefaultWriteTimeout,
		"time one write of answers may take (a client that does not read is closed)")
	fs.durationVar(&a.http.IdleTimeout, "idle-timeout", http1.DefaultIdleTimeout,
		"time a keep-alive connection may wait for its next request")
}

// check refuses limits and timeouts that are not positive (0 would mean
// the default to the libraries, which is not what a user who wrote 0 meant).
func (a *connArgs) check() error {
	if a.maxConns < 0 {
		return badInput("--max-conns %d: must not be negative", a.maxConns)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"read-header-timeout", a.http.ReadHeaderTimeout},
		{"read-timeout", a.http.ReadTimeout},
		{"write-timeout", a.http.WriteTimeout},
		{"idle-timeout", a.http.IdleTimeout},
	} {
		if f.v <= 0 {
			return badInput("--%s %v: must be positive", f.name, f.v)
		}
	}
	return nil
}
