package main

import (
	"time"

	"github.com/spindle-lab/spindle/internal/cliflag"
)

// connArgs are the connection limits and timeouts serve and mock share.
type connArgs = cliflag.Conn

// check refuses limits and timeouts that are not positive (0 would mean
// the default to the libraries, which is not what a user who wrote 0 meant).
func checkConn(a *connArgs) error {
	if a.MaxConns < 0 {
		return badInput("--max-conns %d: must not be negative", a.MaxConns)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"read-header-timeout", a.HTTP.ReadHeaderTimeout},
		{"read-timeout", a.HTTP.ReadTimeout},
		{"write-timeout", a.HTTP.WriteTimeout},
		{"idle-timeout", a.HTTP.IdleTimeout},
	} {
		if f.v <= 0 {
			return badInput("--%s %v: must be positive", f.name, f.v)
		}
	}
	return nil
}
