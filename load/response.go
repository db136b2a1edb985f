package load

import (
	"errors"
	"fmt"

	"github.com/spindle-lab/spindle/http1"
)

// errParse is wrapped by every response parse error.
var errParse = errors.New("malformed response")

// maxHeader bounds a response head (status line and header fields), in
// bytes: a longer one is treated as malformed rather than buffered without
// bound. It is far above what real servers send.
const maxHeader = 64 << 10

// headOptions are the limits the shared head parser applies.
var headOptions = http1.Options{MaxHeaderBytes: maxHeader}

// parser states.
const (
	stHead    uint8 = iota // status line and header fields
	stBody                 // Content-Length body
	stBodyEOF              // body delimited by connection close
	stChunked              // chunked body
	stDone                 // response complete
)

// responseParser parses one HTTP/1.1 response incrementally, from bytes fed
// in pieces of any size. The head goes through http1's parser: in place when
// it arrives in one piece, else gathered in a buffer of the parser's own
// (allocated once per connection), so no reference to the fed bytes is kept
// beyond a call. A chunked body goes through http1's decoder, a
// Content-Length body is skipped by count. It does not allocate once warm.
// After a complete response, reset prepares it for the next one.
type responseParser struct {
	state     uint8
	head      bool // response to a HEAD request: no body
	status    int
	keepAlive bool // the connection may carry another request

	resp      http1.Response
	hp        http1.HeadParser
	headBuf   []byte // a head that arrived in several pieces
	remaining int64  // Content-Length body bytes still to come
	chunks    http1.ChunkedDecoder
}

// reset prepares p for the next response; head marks a HEAD request.
func (p *responseParser) reset(head bool) {
	p.state, p.head, p.status, p.keepAlive = stHead, head, 0, false
	p.hp.Reset()
	p.headBuf = p.headBuf[:0]
}

// done reports whether a whole response was parsed.
func (p *responseParser) done() bool { return p.state == stDone }

// keepAliveAfter reports whether the connection may carry another request
// after this response: HTTP/1.1 unless "Connection: close", HTTP/1.0 only
// with "Connection: keep-alive", never after a body delimited by close.
func (p *responseParser) keepAliveAfter() bool { return p.keepAlive }

// feed parses b. It returns how many bytes it consumed; when the response is
// complete (done), bytes after it are left unconsumed.
func (p *responseParser) feed(b []byte) (int, error) {
	i := 0
	for i < len(b) {
		switch p.state {
		case stHead:
			n, err := p.feedHead(b[i:])
			i += n
			if err != nil {
				return i, fmt.Errorf("%w: %w", errParse, err)
			}
		case stBody:
			n := min(int64(len(b)-i), p.remaining)
			i += int(n)
			p.remaining -= n
			if p.remaining == 0 {
				p.state = stDone
			}
		case stChunked:
			n, _, err := p.chunks.Decode(b[i:])
			i += n
			if err != nil {
				return i, fmt.Errorf("%w: %w", errParse, err)
			}
			if p.chunks.Done() {
				p.state = stDone
			}
		case stBodyEOF:
			return len(b), nil
		case stDone:
			return i, nil
		}
	}
	return i, nil
}

// feedHead parses the head from b, the next bytes received, and returns how
// many of them belong to it (all of them after an error: the stream is
// abandoned).
func (p *responseParser) feedHead(b []byte) (int, error) {
	if len(p.headBuf) == 0 {
		n, err := http1.ParseResponseHead(b, &p.resp, p.head, headOptions)
		if err == nil {
			return n, p.endHead()
		}
		if err != http1.ErrIncomplete {
			return len(b), err
		}
	}
	// Gather the head, up to one byte past the limit (which the parser
	// then refuses), and parse on from where the last piece stopped.
	had := len(p.headBuf)
	if had == 0 {
		p.hp.Reset()
	}
	take := b[:min(len(b), maxHeader+1-had)]
	p.headBuf = append(p.headBuf, take...)
	n, err := p.hp.Parse(p.headBuf, &p.resp, p.head, headOptions)
	switch {
	case err == http1.ErrIncomplete:
		return len(take), nil
	case err != nil:
		return len(b), err
	}
	p.headBuf = p.headBuf[:0]
	return n - had, p.endHead()
}

// endHead checks the parsed head and sets how the body is delimited.
func (p *responseParser) endHead() error {
	r := &p.resp
	switch {
	case r.Major != 1 || r.Minor > 1:
		return fmt.Errorf("unsupported version HTTP/%d.%d", r.Major, r.Minor)
	case r.Status == 101:
		return errors.New("protocol switch not supported")
	case r.Status < 100:
		return fmt.Errorf("status %d below 100", r.Status)
	case r.Status < 200:
		// Interim response (100 Continue, 103 Early Hints): the final one follows.
		p.reset(p.head)
		return nil
	}
	p.status, p.keepAlive = r.Status, r.KeepAlive
	switch {
	case r.Chunked:
		p.chunks.Reset() // MaxBody 0: the body is counted, not kept
		p.state = stChunked
	case r.ContentLength > 0:
		p.remaining = r.ContentLength
		p.state = stBody
	case r.ContentLength == 0:
		p.state = stDone
	default:
		p.state = stBodyEOF
	}
	return nil
}

// eof tells the parser the connection was closed. It reports whether that
// completed the response (a body delimited by close); otherwise the response
// is truncated.
func (p *responseParser) eof() bool {
	if p.state == stBodyEOF {
		p.state = stDone
		return true
	}
	return p.state == stDone
}
