package load

import (
	"crypto/tls"
	"errors"
	"fmt"
	"iter"
	"net"
	"time"
)

// HTTPS without a goroutine per connection.
//
// crypto/tls wants a blocking net.Conn, and its errors are sticky, so it
// cannot be called with a non-blocking socket and retried on EAGAIN. Each
// TLS connection therefore runs its client (handshake, then a read loop) as
// a coroutine (iter.Pull) on its load thread, over memConn, an in-memory
// transport: the worker reads ciphertext from the socket without blocking,
// hands it to the session and resumes the coroutine, which decrypts what it
// can and yields back, on the same OS thread, when it needs more input;
// what crypto/tls wrote (handshake messages, requests, alerts) is collected
// in a buffer that the worker writes to the socket without blocking. A
// resume is a direct coroutine switch (a few hundred ns), so the event loop
// stays one thread per worker, as for plain HTTP.
//
// Requests are encrypted by calling tls.Conn.Write from the worker itself:
// after the handshake, Write touches only the output half of the tls.Conn
// (Read, parked in the coroutine, holds the input half) and memConn.Write
// never blocks.

// Defaults of the TLS versions, reused as the spindle load flag defaults.
const (
	DefaultTLSMin = tls.VersionTLS12
	DefaultTLSMax = tls.VersionTLS13
)

// tlsReadSize is the size of the buffer each tls.Conn.Read decrypts into:
// one whole TLS record's plaintext (2^14 bytes, RFC 8446 5.1).
const tlsReadSize = 16 << 10

// errSessionClosed is what memConn.Read returns once the session is closed.
var errSessionClosed = errors.New("tls session closed")

// tlsSession is one connection's TLS client.
type tlsSession struct {
	tc    *tls.Conn
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool

	in    []byte // ciphertext received, not yet consumed by crypto/tls
	out   []byte // ciphertext written by crypto/tls, not yet sent
	plain []byte // plaintext decrypted since the worker last took it
	// rbuf is what tls.Conn.Read decrypts into; the plaintext is copied
	// to plain before the coroutine yields again, so the load thread's
	// sessions share one rbuf (only one of them runs at a time).
	rbuf []byte

	done   bool  // handshake complete
	err    error // the session's end: handshake or read error (sticky)
	closed bool  // close was called
}

// newTLSSession starts a client session with cfg and runs it until it needs
// input: the ClientHello is then in s.out.
// rbuf (tlsReadSize bytes) may be shared by sessions run on one thread.
func newTLSSession(cfg *tls.Config, rbuf []byte) *tlsSession {
	return newSession(func(c net.Conn) *tls.Conn { return tls.Client(c, cfg) }, rbuf)
}

// newSession is newTLSSession with the tls.Conn made by side (tls.Client;
// tls.Server for the tests' in-memory servers).
func newSession(side func(net.Conn) *tls.Conn, rbuf []byte) *tlsSession {
	s := &tlsSession{rbuf: rbuf}
	s.tc = side(memConn{s})
	s.next, s.stop = iter.Pull(s.body)
	s.next()
	return s
}

// body is the coroutine: the handshake, then decrypting until an error.
func (s *tlsSession) body(yield func(struct{}) bool) {
	s.yield = yield
	if err := s.tc.Handshake(); err != nil {
		s.err = err
		return
	}
	s.done = true
	for {
		// Read parks in memConn.Read (the coroutine yields) until a whole
		// record has come; it writes into rbuf only when it returns.
		n, err := s.tc.Read(s.rbuf)
		s.plain = append(s.plain, s.rbuf[:n]...)
		if err != nil {
			s.err = err
			return
		}
	}
}

// feed gives the session ciphertext and runs it until it has consumed all
// of it (or ended). The session keeps no reference to in afterwards.
func (s *tlsSession) feed(in []byte) {
	if s.err != nil || s.closed {
		return
	}
	s.in = in
	s.next()
	s.in = nil
}

// take returns the plaintext decrypted so far and forgets it; the bytes stay
// valid until the next feed.
func (s *tlsSession) take() []byte {
	p := s.plain
	s.plain = s.plain[:0]
	return p
}

// write encrypts b into s.out. Only after the handshake.
func (s *tlsSession) write(b []byte) error {
	_, err := s.tc.Write(b)
	return err
}

// close ends the coroutine: a parked Read returns errSessionClosed.
func (s *tlsSession) close() {
	s.closed = true
	s.stop()
}

// version is the negotiated TLS version (0 before the handshake).
func (s *tlsSession) version() uint16 {
	v, _ := s.handshake()
	return v
}

// handshake returns the negotiated TLS version and whether the session was
// resumed (0, false before the handshake).
func (s *tlsSession) handshake() (version uint16, resumed bool) {
	if !s.done {
		return 0, false
	}
	cs := s.tc.ConnectionState()
	return cs.Version, cs.DidResume
}

// memConn is the session's transport: Read takes what feed gave, yielding to
// the worker when there is nothing; Write appends to the output buffer.
type memConn struct{ s *tlsSession }

func (m memConn) Read(b []byte) (int, error) {
	s := m.s
	for len(s.in) == 0 {
		if s.closed || !s.yield(struct{}{}) {
			return 0, errSessionClosed
		}
	}
	n := copy(b, s.in)
	s.in = s.in[n:]
	return n, nil
}

func (m memConn) Write(b []byte) (int, error) {
	if m.s.closed {
		return 0, errSessionClosed
	}
	m.s.out = append(m.s.out, b...)
	return len(b), nil
}

func (m memConn) Close() error                     { return nil }
func (m memConn) LocalAddr() net.Addr              { return memAddr{} }
func (m memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (m memConn) SetDeadline(time.Time) error      { return nil }
func (m memConn) SetReadDeadline(time.Time) error  { return nil }
func (m memConn) SetWriteDeadline(time.Time) error { return nil }

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "tls-session" }

// TLSVersionName names a TLS version as the flags and reports write it
// ("1.3"); ParseTLSVersion reads it back.
func TLSVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS10:
		return "1.0"
	case tls.VersionTLS11:
		return "1.1"
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return "unknown"
}

// ParseTLSVersion parses "1.2" or "1.3" (spindle load speaks no older TLS).
func ParseTLSVersion(s string) (uint16, error) {
	switch s {
	case "1.2":
		return tls.VersionTLS12, nil
	case "1.3":
		return tls.VersionTLS13, nil
	}
	return 0, badOptions("TLS version %q is not supported (want 1.2 or 1.3)", s)
}

// tlsConfig builds the client configuration of o for target t.
func tlsConfig(o Options, t target) *tls.Config {
	cfg := &tls.Config{
		ServerName:         t.sni,
		InsecureSkipVerify: o.Insecure,
		MinVersion:         o.TLSMin,
		MaxVersion:         o.TLSMax,
		// Offer HTTP/1.1 alone, so that a server that speaks HTTP/2 too
		// (net/http's does) picks the protocol this generator speaks.
		NextProtos: []string{"http/1.1"},
	}
	if o.TLSResume {
		// One ticket per connection is what reconnections can use.
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(o.Connections)
	}
	return cfg
}

// probeTLS makes one TLS handshake over conn, so that a certificate the
// client refuses is reported before any load.
func probeTLS(conn net.Conn, cfg *tls.Config, timeout time.Duration) error {
	_ = conn.SetDeadline(time.Now().Add(timeout))
	tc := tls.Client(conn, cfg)
	err := tc.Handshake()
	if err != nil {
		var verr *tls.CertificateVerificationError
		if errors.As(err, &verr) {
			return fmt.Errorf("%w: tls handshake: %w (--insecure skips verification)", ErrUnreachable, err)
		}
		return fmt.Errorf("%w: tls handshake: %w", ErrUnreachable, err)
	}
	return tc.Close()
}

var _ net.Conn = memConn{}
