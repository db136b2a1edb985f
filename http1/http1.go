// Package http1 parses and writes HTTP/1.x messages for event loops: an
// incremental request parser (request line, headers, Content-Length and
// chunked bodies, keep-alive rules of HTTP/1.0 and 1.1, pipelining), a
// response writer and an incremental response parser for backend clients.
//
// The parsers are pure functions over a byte buffer: they either consume one
// complete message or report ErrIncomplete, so a caller that reads from a
// non-blocking socket simply appends what arrived and calls again. Parsed
// fields are slices of the caller's buffer (or of a scratch buffer owned by
// the message, for chunked bodies) and are valid until the buffer is reused.
// Once a Request or Response value has grown to the size of the traffic, no
// call allocates.
//
// The accept/reject decisions follow net/http's http.ReadRequest and
// http.ReadResponse (checked by a differential fuzzer), with two deliberate
// exceptions allowed by RFC 9112: a request header line folded onto the next
// line (obs-fold, §5.2) and whitespace between a field name and its colon
// (§5.1) are rejected with 400 where net/http tolerates them. In responses
// obs-fold is accepted, as §5.2 asks of a user agent, and the line break of
// each fold is overwritten with spaces in the caller's buffer (the one write
// a parser makes to it). A chunked body's trailer section must end in CRLF
// CRLF within 4 KiB (see ChunkedDecoder).
//
// HeadParser is the one head parser, resumable: its ParseRequest serves
// ParseRequest, its Parse serves ParseResponseHead, ParseResponse and the
// load generator, and its ReadRequest and ReadResponse, the one
// head-reading loop (over a connection's InBuf, refilled by a Source),
// serve ServerReader, ClientReader and carrierhttp's Server and Transport.
// BodyReader is the one body framing (by length, chunked with trailers, to
// the close): the whole-buffer parsers and both readers frame bodies with
// its Take, carrierhttp's Server and Transport stream them with its Next
// (the Transport keeping trailer sections with KeepTrailer).
// ChunkedDecoder, the one chunked-body decoder, incremental, is its
// chunked part (the load generator uses it alone). Either reader reads a
// message of n bytes in O(n) however it is split into reads. The byte
// tables (tokens, hosts, plain paths), the connection's linger (Linger)
// and net/http's buffer size behind its limits (NetHTTPBuffer) are here
// too, for carrierhttp. ParseRequest also makes the checks
// net/http's server adds after ReadRequest: an HTTP/1.1 request without a
// Host field (CONNECT excepted) or with a malformed one is refused (400), a
// major version other than 1 too (505). Beyond net/http, as RFC 9112 asks,
// an HTTP/1.0 request with Transfer-Encoding is refused (400, §6.1) and one
// with both Content-Length and chunked coding is read as chunked and closes
// the connection after its answer (§6.3).
//
// ServeConn bounds what a connection costs: with Options.DiscardBody bodies
// are dropped as they arrive, buffers grown by a large message go back to
// their first size, every read and write has a deadline (Options), and a
// connection the server ends is half-closed and drained before it is closed,
// so that the client reads its last answer instead of a reset.
package http1

import (
	"errors"
	"fmt"
	"time"
)

// Limits and timeouts of a server connection. The zero value of every
// numeric field means its Default* constant.
//
// The timeouts follow one rule, net/http's: a new connection has
// ReadHeaderTimeout for the head of its first request; a keep-alive
// connection has IdleTimeout between requests; once a request's first byte
// arrives (for the first request: once the connection is accepted), its head
// must arrive within ReadHeaderTimeout and the whole request, body included,
// within ReadTimeout. A connection past a read timeout is closed without an
// answer, as net/http and nginx do. Each write of responses must complete
// within WriteTimeout, so a client that sends requests and never reads its
// answers is closed too.
type Options struct {
	// MaxHeaderBytes bounds the request line plus header section, in bytes;
	// a request over it is answered 431 and the connection closed.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request body, in bytes (decoded size for chunked
	// bodies); a request over it is answered 413 and the connection closed.
	MaxBodyBytes int64
	// ReadHeaderTimeout is the longest time from the first byte of a request
	// (from the accept, for a connection's first request) to the end of its
	// header section.
	ReadHeaderTimeout time.Duration
	// ReadTimeout is the longest time from the same start to the end of the
	// whole request, body included.
	ReadTimeout time.Duration
	// WriteTimeout is the longest time one write of responses may take (a
	// client that does not read fills the socket buffers and then stalls it).
	WriteTimeout time.Duration
	// IdleTimeout is the longest time a keep-alive connection may wait for
	// the first byte of its next request; an idle client is disconnected
	// (by ServerReader within one second after it).
	IdleTimeout time.Duration
	// DiscardBody makes ServerReader read request bodies and drop them as
	// they arrive instead of keeping them whole: Request.Body is then nil
	// and a connection's buffer stays within about twice MaxHeaderBytes
	// however large the body (a server whose handlers ignore bodies bounds
	// its memory per connection so).
	DiscardBody bool
	// Server, when not empty, is the Server header of every response
	// ServeConn writes (TechEmpower's rules want one).
	Server string
}

const (
	// DefaultMaxHeaderBytes is 8 KiB, the limit of nginx's default
	// large_client_header_buffers line and of most proxies.
	DefaultMaxHeaderBytes = 8 << 10
	// DefaultMaxBodyBytes is 1 MiB, nginx's default client_max_body_size.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultReadHeaderTimeout is 10 s: generous for any real client, short
	// enough that slow-loris connections do not pile up.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout is 10 s too: a 1 MiB body (DefaultMaxBodyBytes)
	// then needs a client of about 100 KB/s, and a body trickled a byte at
	// a time holds its connection no longer than a slow head does.
	DefaultReadTimeout = 10 * time.Second
	// DefaultWriteTimeout is 10 s, as long as a request may take to read: a
	// client that stops reading its answers is as dead as one that stops
	// sending (nginx's send_timeout is 60 s between two writes).
	DefaultWriteTimeout = 10 * time.Second
	// DefaultIdleTimeout is 60 s, nginx's keepalive_timeout default (75 s)
	// rounded down to a minute.
	DefaultIdleTimeout = 60 * time.Second
)

// NetHTTPBuffer is the size of net/http's read buffer (bufio's default,
// 4096 bytes), behind limits of net/http that this package and
// carrierhttp follow: its server reads a head up to MaxHeaderBytes plus
// this many bytes before it answers 431, a chunk-size line must end within
// it, and the end of a trailer section is looked for within it.
const NetHTTPBuffer = 4 << 10

// WithDefaults returns o with zero fields replaced by their defaults.
func (o Options) WithDefaults() Options {
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return o
}

// ErrIncomplete reports that the buffer holds only the beginning of a
// message: read more and parse again.
var ErrIncomplete = errors.New("http1: incomplete message")

// Error is a request the server must refuse: Status is the response status
// (400, 413, 431, 501 or 505) and the connection is closed after answering.
type Error struct {
	Status int    // HTTP status code to answer with
	Reason string // what was wrong, for logs and the response body
}

func (e *Error) Error() string {
	return fmt.Sprintf("http1: %d %s: %s", e.Status, StatusText(e.Status), e.Reason)
}

// Static errors, so that rejecting a request does not allocate.
var (
	errBadRequestLine  = &Error{400, "malformed request line"}
	errBadMethod       = &Error{400, "invalid method"}
	errBadTarget       = &Error{400, "invalid request target"}
	errBadVersion      = &Error{400, "malformed HTTP version"}
	errVersion         = &Error{505, "unsupported HTTP major version"}
	errBadHeader       = &Error{400, "malformed header line"}
	errFolded          = &Error{400, "obsolete line folding in header"}
	errManyHosts       = &Error{400, "too many Host headers"}
	errNoHost          = &Error{400, "missing required Host header"}
	errBadHost         = &Error{400, "malformed Host header"}
	errCoding10        = &Error{400, "Transfer-Encoding in an HTTP/1.0 request"}
	errBadLength       = &Error{400, "invalid Content-Length"}
	errLengths         = &Error{400, "differing Content-Length headers"}
	errTooLarge        = &Error{431, "request header fields too large"}
	errBodyTooLarge    = &Error{413, "content too large"}
	errCoding          = &Error{501, "unsupported transfer coding"}
	errChunked         = &Error{400, "malformed chunked encoding"}
	errTrailer         = &Error{400, "malformed trailer section"}
	errBadTrailerKey   = &Error{400, "forbidden field in Trailer"}
	errBadStatusLine   = &Error{400, "malformed status line"}
	errResponseTooLong = &Error{400, "response header section too large"}
)

// StatusOf returns the status a server answers to a parse error: the
// Error's status, or 400 for anything else.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 400
}

// StatusText returns the reason phrase of the statuses this package writes,
// or "Status" for others.
func StatusText(code int) string {
	switch code {
	case 100:
		return "Continue"
	case 200:
		return "OK"
	case 204:
		return "No Content"
	case 400:
		return "Bad Request"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 408:
		return "Request Timeout"
	case 413:
		return "Request Entity Too Large"
	case 431:
		return "Request Header Fields Too Large"
	case 500:
		return "Internal Server Error"
	case 501:
		return "Not Implemented"
	case 502:
		return "Bad Gateway"
	case 503:
		return "Service Unavailable"
	case 504:
		return "Gateway Timeout"
	case 505:
		return "HTTP Version Not Supported"
	}
	return "Status"
}
