package carrier

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

// Dialers for drivers. pgx (pgconn.Config.DialFunc), go-redis
// (redis.Options.Dialer) and gRPC (grpc.WithContextDialer) take a function
// of this shape and use the conns it returns from their own goroutines as
// well as from the caller's: a carrier conn serves both (foreign.go). The
// conns are held by no task (a pool keeps them beyond any request): a
// panicking task does not close them, and floating carriers do not move
// them.

// DialContext connects to addr ("host:port", Task.Dial's rules) on c,
// within ctx's deadline, for a driver. Called by a task of c it dials from
// that task; from anywhere else it runs the dial as a task of c and waits
// for it (or for ctx, closing the conn that comes too late). network must
// be "tcp", "tcp4" or "tcp6".
func (c *Carrier) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("carrier: network %q not supported (want tcp, tcp4 or tcp6)", network)}
	}
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	timeout := time.Duration(0)
	if d, ok := ctx.Deadline(); ok {
		if timeout = time.Until(d); timeout <= 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: os.ErrDeadlineExceeded}
		}
	}
	if t := c.caller(); t != nil {
		return t.dialFree(addr, timeout)
	}
	type result struct {
		cn  *Conn
		err error
	}
	res := make(chan result, 1)
	if err := c.SubmitLocal(func(t *Task) {
		cn, err := t.dialFree(addr, timeout)
		res <- result{cn, err}
	}); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Err: err}
	}
	var r result
	select {
	case r = <-res:
	case <-c.done: // stopped: the dial task was dropped unrun, or ran (its result is waiting)
		select {
		case r = <-res:
		default:
			r.err = &net.OpError{Op: "dial", Net: network, Err: ErrGroupClosed}
		}
	case <-ctx.Done():
		go func() { // the dial goes on: close what it brings, unless the carrier drops it
			select {
			case r := <-res:
				if r.cn != nil {
					r.cn.Close()
				}
			case <-c.done:
			}
		}()
		return nil, &net.OpError{Op: "dial", Net: network, Err: ctx.Err()}
	}
	if r.err != nil {
		return nil, r.err
	}
	return r.cn, nil
}

// dialFree is Task.Dial for a conn that no task holds.
func (t *Task) dialFree(addr string, timeout time.Duration) (*Conn, error) {
	cn, err := t.Dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	defer t.leave(t.enter())
	t.unhold(cn)
	return cn, nil
}

// DialContext connects to addr for a driver on a carrier of g: the one
// that runs the task ctx carries (ContextWithTask; a handler's request
// context), whichever goroutine calls, else the next one round-robin
// (Group.Go's rule). See Carrier.DialContext. A driver whose pool dials
// from its own goroutines with a context of its own (pgxpool, go-redis)
// spreads its conns over the carriers; one pool per carrier (PerCarrier
// with Carrier.DialContext) keeps a request's queries on its carrier.
func (g *Group) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.carrierFor(ctx).DialContext(ctx, network, addr)
}

// carrierFor is the carrier of the task ctx carries, or the next one
// round-robin.
func (g *Group) carrierFor(ctx context.Context) *Carrier {
	if ref, ok := ctx.Value(taskKey{}).(taskRef); ok && ref.c != nil && ref.c.g == g {
		return ref.c
	}
	n := uint32(len(g.carriers))
	return g.carriers[(g.rr.Add(1)-1)%n]
}

// PerCarrier holds one value per carrier of a group: a driver's pool or
// client made with that carrier's DialContext, so that a task's queries go
// over conns its own carrier polls. Get picks the calling task's.
type PerCarrier[T any] struct {
	g    *Group
	vals []T
}

// NewPerCarrier makes one value per carrier of g with mk (called in
// carrier order, from the caller's goroutine). When mk fails, the values
// made so far are given to undo (nil: none) and the error is returned.
func NewPerCarrier[T any](g *Group, mk func(c *Carrier) (T, error), undo func(T)) (*PerCarrier[T], error) {
	if g == nil || mk == nil {
		return nil, errors.New("carrier: NewPerCarrier: nil group or constructor")
	}
	p := &PerCarrier[T]{g: g, vals: make([]T, 0, len(g.carriers))}
	for _, c := range g.carriers {
		v, err := mk(c)
		if err != nil {
			if undo != nil {
				for _, made := range p.vals {
					undo(made)
				}
			}
			return nil, fmt.Errorf("carrier %d: %w", c.id, err)
		}
		p.vals = append(p.vals, v)
	}
	return p, nil
}

// Get returns the value of the carrier that runs the task ctx carries, or
// that runs the caller (a task of the group without the context), else
// one round-robin: a goroutine outside the group may use any.
func (p *PerCarrier[T]) Get(ctx context.Context) T {
	if ref, ok := ctx.Value(taskKey{}).(taskRef); ok && ref.c != nil && ref.c.g == p.g {
		return p.vals[ref.c.id]
	}
	for i, c := range p.g.carriers {
		if c.caller() != nil {
			return p.vals[i]
		}
	}
	return p.vals[p.g.carrierFor(ctx).id]
}

// Of returns carrier c's value.
func (p *PerCarrier[T]) Of(c *Carrier) T { return p.vals[c.id] }

// All returns the values in carrier order (to close them at the end).
func (p *PerCarrier[T]) All() []T { return p.vals }
