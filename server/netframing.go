package server

import (
	"errors"
	"net"
	"sync"

	"github.com/spindle-lab/spindle/http1"
)

// net/http's server removes Content-Length from a request that also has
// Transfer-Encoding: chunked, and Transfer-Encoding from an HTTP/1.0
// request, before a handler sees the request: so it keeps a connection open
// after a request with both fields (RFC 9112 §6.3 says the server must
// close it after answering) and reads an HTTP/1.0 chunked body as the next
// request (§6.1: faulty framing). The nethttp mode therefore watches the
// request heads as they stream through the connection, with http1's own
// resumable head parser and chunked decoder, and tells the handler which
// request to answer 400 and which to answer and then close.

// framing is what the watcher says about one request.
type framing uint8

const (
	framingOK         framing = iota // nothing to add
	framingCloseAfter                // Content-Length with chunked: answer, then close
	framingRefuse                    // HTTP/1.0 with Transfer-Encoding: 400, close
)

// framingListener wraps every accepted connection in a framingConn.
type framingListener struct {
	net.Listener
	o http1.Options
}

// Accept returns the next connection, wrapped.
func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return newFramingConn(c, l.o), nil
}

// framingConn is a client connection whose request heads are parsed as
// net/http reads them. Read is called by one goroutine at a time (net/http's
// connection reader); the verdicts queue is shared with the handler.
type framingConn struct {
	net.Conn
	o    http1.Options
	hp   http1.HeadParser
	req  http1.Request
	head []byte // the head read so far (at most o.MaxHeaderBytes)
	body int64  // Content-Length body bytes still to pass
	// chunked is set while a chunked body passes, decoded by cd to find
	// its end.
	chunked bool
	cd      http1.ChunkedDecoder
	// lost is set when the stream can no longer be followed (a head this
	// parser refuses, a bad chunked body): net/http answers those itself
	// (or the handler does), or it accepts what http1 refuses (obs-fold),
	// so every request the watcher has no verdict for from then on is
	// answered and the connection closed (next), lest a later request's
	// faulty framing pass unwatched (request smuggling). untracked is
	// lost as the handler's goroutine reads it.
	lost bool

	mu        sync.Mutex
	verdicts  []framing // one per head parsed, oldest first
	untracked bool
}

func newFramingConn(c net.Conn, o http1.Options) *framingConn {
	o = o.WithDefaults()
	return &framingConn{Conn: c, o: o, cd: http1.ChunkedDecoder{MaxBody: o.MaxBodyBytes}}
}

// Read reads from the connection and watches what it read.
func (c *framingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.lost {
		c.watch(p[:n])
	}
	return n, err
}

// CloseWrite half-closes the connection when it can (net/http uses it to
// let the client read an answer before the close).
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// next returns the verdict on the oldest request not yet asked about:
// close after it when the watcher lost the stream before that request.
func (c *framingConn) next() framing {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.verdicts) == 0 {
		if c.untracked {
			return framingCloseAfter
		}
		return framingOK
	}
	v := c.verdicts[0]
	c.verdicts = append(c.verdicts[:0], c.verdicts[1:]...)
	return v
}

// loseTrack gives up following the stream (lost).
func (c *framingConn) loseTrack() {
	c.lost = true
	c.mu.Lock()
	c.untracked = true
	c.mu.Unlock()
}

func (c *framingConn) push(v framing) {
	c.mu.Lock()
	c.verdicts = append(c.verdicts, v)
	c.mu.Unlock()
}

// watch follows the stream through p: heads, then bodies to skip.
func (c *framingConn) watch(p []byte) {
	for len(p) > 0 && !c.lost {
		switch {
		case c.body > 0:
			k := int(min(int64(len(p)), c.body))
			c.body -= int64(k)
			p = p[k:]
		case c.chunked:
			n, _, err := c.cd.Decode(p)
			p = p[n:]
			if err != nil || (n == 0 && !c.cd.Done()) {
				c.loseTrack()
			} else if c.cd.Done() {
				c.chunked = false
			}
		default:
			p = c.watchHead(p)
		}
	}
}

// keepHead is the most capacity the partial-head buffer keeps between
// heads (bytes): a head split over reads is rare, and its buffer is not
// kept per idle connection.
const keepHead = 1 << 10

// watchHead parses the head that p begins or continues; once the head is
// whole it records its verdict and returns the bytes of p after it. A head
// within one read is parsed where it lies; only one split over reads is
// copied (into c.head, at most MaxHeaderBytes).
func (c *framingConn) watchHead(p []byte) []byte {
	buf := p
	if len(c.head) > 0 {
		c.head = append(c.head, p...)
		buf = c.head
	}
	n, err := c.hp.ParseRequest(buf, &c.req, c.o)
	switch {
	case errors.Is(err, http1.ErrIncomplete):
		switch {
		case len(buf) > c.o.MaxHeaderBytes: // net/http answers 431
			c.loseTrack()
		case len(c.head) == 0:
			c.head = append(c.head, p...) // at the offsets the parser saw
		}
		return nil
	case err != nil:
		if c.req.Major == 1 && c.req.Minor == 0 && c.req.Get("Transfer-Encoding") != nil {
			c.push(framingRefuse) // RFC 9112 §6.1; the connection closes after the 400
		}
		c.loseTrack()
		return nil
	}
	rest := p[len(p)-(len(buf)-n):]
	v := framingOK
	if c.req.Chunked && c.req.Get("Content-Length") != nil {
		v = framingCloseAfter // RFC 9112 §6.3; nothing after it is read
		c.loseTrack()
	}
	c.push(v)
	if c.req.Chunked {
		c.chunked = true
		c.cd.Reset()
	} else {
		c.body = c.req.ContentLength
	}
	c.hp.Reset()
	if cap(c.head) > keepHead {
		c.head = nil
	} else {
		c.head = c.head[:0]
	}
	return rest
}
