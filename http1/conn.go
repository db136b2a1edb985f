package http1

import (
	"errors"
	"fmt"
	"io"
	"time"
)

// Conn is what the readers need from a connection: a carrier.Conn and a
// net.Conn both qualify.
type Conn interface {
	Read(p []byte) (int, error)
	SetReadDeadline(t time.Time) error
}

const (
	// initialBuffer holds any ordinary request or response head in one read.
	initialBuffer = 4 << 10
	// keepBuffer is the largest buffer kept between messages; a larger one
	// (grown for a large body) is dropped once that message is consumed.
	keepBuffer = 64 << 10
	// deadlineSlack is how much later than IdleTimeout an idle deadline may
	// fire: idle connections close between IdleTimeout and IdleTimeout+1s,
	// and a busy connection re-arms its deadline once a second at most
	// instead of on every request.
	deadlineSlack = time.Second
)

// InBuf is a connection's read buffer: Buf[Start:End] is input not yet
// consumed, and EOF says the peer closed its side. http1's readers keep
// their input in one, and so do carrierhttp's server and Transport
// connections.
type InBuf struct {
	Buf        []byte
	Start, End int
	EOF        bool
}

// Room makes room for a read when the buffer is full: it moves pending
// input to the front, or grows the buffer (doubling, up to limit bytes, and
// always by one byte at least). It reports whether input moved (slices into
// it are stale then).
func (b *InBuf) Room(limit int) bool {
	if b.Buf == nil {
		b.Buf = make([]byte, initialBuffer)
	}
	if b.End < len(b.Buf) {
		return false
	}
	if b.Start > 0 {
		b.End = copy(b.Buf, b.Buf[b.Start:b.End])
		b.Start = 0
		return true
	}
	nb := make([]byte, max(min(2*len(b.Buf), limit), len(b.Buf)+1))
	b.End = copy(nb, b.Buf[b.Start:b.End])
	b.Buf = nb
	return true
}

// Fill reads once from r into the free space (Room must have made some).
// At end of file it sets EOF and returns the bytes read with a nil error;
// a read of nothing without an error is io.ErrNoProgress.
func (b *InBuf) Fill(r io.Reader) (int, error) {
	n, err := r.Read(b.Buf[b.End:])
	b.End += n
	switch {
	case errors.Is(err, io.EOF):
		b.EOF = true
		return n, nil
	case n > 0:
		return n, nil
	case err == nil:
		return 0, io.ErrNoProgress
	}
	return 0, err
}

// Consume drops n bytes of input; with none left the buffer rewinds, and
// one grown past keepBuffer is dropped.
func (b *InBuf) Consume(n int) {
	b.Start += n
	if b.Start == b.End {
		b.Start, b.End = 0, 0
		if cap(b.Buf) > keepBuffer {
			b.Buf = nil
		}
	}
}

// buffer is a reader's InBuf with its read deadline and a count of moves.
type buffer struct {
	InBuf
	deadline time.Time // read deadline last set on the connection
	moves    int       // times pending input moved (slices into it went stale)
}

func (b *buffer) pending() []byte { return b.Buf[b.Start:b.End] }

// fill reads once from c into the free space, making room first; a
// buffer already at limit bytes and full of one message is errTooLarge
// (the callers' parsers refuse before this). At end of file it returns
// io.EOF when the read brought nothing.
func (b *buffer) fill(c Conn, limit int) error {
	if b.Buf != nil && b.End == len(b.Buf) && b.Start == 0 && len(b.Buf) >= limit {
		return errTooLarge
	}
	if b.Room(limit) {
		b.moves++
	}
	n, err := b.Fill(c)
	switch {
	case err != nil:
		return err
	case n == 0: // end of file
		return io.EOF
	}
	return nil
}

// setDeadline arms c's read deadline at d, or at most slack later: a
// deadline already armed within [d, d+slack] is kept, else d+slack is armed.
func (b *buffer) setDeadline(c Conn, d time.Time, slack time.Duration) error {
	if ahead := b.deadline.Sub(d); !b.deadline.IsZero() && ahead >= 0 && ahead <= slack {
		return nil
	}
	b.deadline = d.Add(slack)
	if err := c.SetReadDeadline(b.deadline); err != nil {
		return fmt.Errorf("http1: set read deadline: %w", err)
	}
	return nil
}

// reader is what ServerReader and ClientReader share: the buffer and the
// resumable parse of the message being read.
type reader struct {
	c  Conn
	o  Options
	b  buffer
	pr progress
}

// progress is how far a reader got with the message it is reading. It
// lives in the reader, not on the stack, because the head parser is handed
// to an incoming's method, which escape analysis cannot see through.
type progress struct {
	hp    HeadParser
	head  int // length of the head once parsed, else 0
	seen  int // pending bytes taken so far: the head and chunked framing
	moves int // b.moves when the message's slices into the input were made
	dec   ChunkedDecoder
	// With DiscardBody: the body was started and pr.left of its
	// Content-Length bytes are still to come.
	counting bool
	left     int64
}

// incoming is a message a reader takes from its connection: a *Request or
// a *Response.
type incoming interface {
	message() *Message
	// parseHead parses the head with hp, resuming where hp stopped.
	parseHead(hp *HeadParser, buf []byte, o Options) (int, error)
}

func (m *Message) message() *Message { return m }

func (r *Request) parseHead(hp *HeadParser, buf []byte, o Options) (int, error) {
	return hp.ParseRequest(buf, r, o)
}

// parseHead parses the head of a response to a GET (a reader's client asks
// nothing else).
func (r *Response) parseHead(hp *HeadParser, buf []byte, o Options) (int, error) {
	return hp.Parse(buf, r, false, o)
}

func newReader(c Conn, o Options) reader { return reader{c: c, o: o.WithDefaults()} }

// fill reads more input, growing the buffer up to what one message may take.
func (r *reader) fill() error {
	limit := r.o.MaxHeaderBytes + int(r.o.MaxBodyBytes) + maxChunkExcess + initialBuffer
	if err := r.b.fill(r.c, limit); err != nil && err != io.EOF {
		return err
	}
	return nil
}

// begin starts reading a message.
func (r *reader) begin() {
	r.pr.hp.Reset()
	r.pr.head, r.pr.seen, r.pr.moves = 0, 0, r.b.moves
	r.pr.dec = ChunkedDecoder{MaxBody: r.o.MaxBodyBytes}
	r.pr.counting, r.pr.left = false, 0
}

// trim drops m's chunked-body scratch buffer when a large body grew it, so
// a connection keeps at most keepBuffer bytes of it between messages.
func trim(m *Message) {
	if cap(m.chunks) > keepBuffer {
		m.chunks = nil
	}
}

// advance goes on parsing m from the pending input where the last call
// since begin stopped, so a message of n bytes costs O(n) however it is
// split into reads. A chunked body is decoded into m as it arrives, so only
// the head and the undecoded remainder stay buffered. It returns nil once m
// is complete (and consumed from the buffer), ErrIncomplete while more
// input is needed, or the error that makes m invalid.
func (r *reader) advance(m incoming) error {
	pr, p, msg := &r.pr, r.b.pending(), m.message()
	if r.b.moves != pr.moves { // m's slices into the input are stale
		pr.moves = r.b.moves
		pr.hp.Reset()
		if pr.head > 0 {
			if _, err := m.parseHead(&pr.hp, p, r.o); err != nil {
				return err // cannot be: these bytes parsed before
			}
		}
	}
	if pr.head == 0 {
		n, err := m.parseHead(&pr.hp, p, r.o)
		if err != nil {
			return err
		}
		pr.head, pr.seen = n, n
		msg.chunks = msg.chunks[:0]
	}
	n, err := r.body(p, msg)
	if err == nil {
		r.b.Consume(n)
	}
	return err
}

// body goes on with the body of m, whose head starts p; for a chunked body
// pr.seen is how far p was decoded. It returns the length of the whole
// message, or ErrIncomplete.
func (r *reader) body(p []byte, m *Message) (int, error) {
	pr := &r.pr
	if r.o.DiscardBody {
		return r.discard(p, m)
	}
	if !m.Chunked {
		return fixedBody(p, pr.head, m, r.b.EOF, r.o.MaxBodyBytes)
	}
	var n int
	var err error
	m.chunks, n, err = pr.dec.AppendDecoded(m.chunks, p[pr.seen:])
	pr.seen += n
	switch {
	case err != nil:
		return 0, err
	case !pr.dec.Done():
		// All of p is decoded: keep only the head buffered.
		r.b.End = r.b.Start + pr.head
		pr.seen = pr.head
		return 0, ErrIncomplete
	}
	m.Body = m.chunks
	return pr.seen, nil
}

// discard goes on with the body of a request read with DiscardBody: body
// bytes are counted (pr.left) or decoded (chunked) and dropped, so only the
// head stays buffered. m.Body stays nil. Its results are body's.
func (r *reader) discard(p []byte, m *Message) (int, error) {
	pr := &r.pr
	if pr.seen == pr.head && !pr.counting { // the body starts
		if !m.Chunked && m.ContentLength > r.o.MaxBodyBytes {
			return 0, errBodyTooLarge
		}
		pr.counting, pr.left = true, max(m.ContentLength, 0)
	}
	if m.Chunked {
		for pr.seen < len(p) && !pr.dec.Done() {
			n, _, err := pr.dec.Decode(p[pr.seen:])
			if err != nil {
				return 0, err
			}
			pr.seen += n
		}
	} else {
		n := min(int64(len(p)-pr.seen), pr.left)
		pr.seen += int(n)
		pr.left -= n
	}
	if (m.Chunked && pr.dec.Done()) || (!m.Chunked && pr.left == 0) {
		return pr.seen, nil
	}
	// All of p is taken: keep only the head buffered.
	r.b.End = r.b.Start + pr.head
	pr.seen = pr.head
	return 0, ErrIncomplete
}

// ServerReader reads pipelined requests from one client connection,
// enforcing Options' limits and timeouts. It allocates its buffer once and
// reuses it.
type ServerReader struct {
	reader
	// sendContinue, when set, writes "100 Continue" (ServeConn sets it, so
	// that the interim response follows the responses it still holds).
	sendContinue func() error
	opened       time.Time // when the reader was made: the connection's accept
	started      bool      // a request was begun: later waits are idle
}

// NewServerReader returns a reader of requests from c, a connection
// accepted now: its first request's timeouts run from now.
func NewServerReader(c Conn, o Options) *ServerReader {
	return &ServerReader{reader: newReader(c, o), opened: time.Now()}
}

// Next reads the next request into req; its slices are valid until the next
// call. It returns io.EOF when the client closed between requests,
// io.ErrUnexpectedEOF when it closed within one, an error wrapping
// os.ErrDeadlineExceeded when a timeout of Options passed (the client was
// idle too long, or slow with a request's head or whole), and an *Error for
// a request to refuse.
//
// Parsing resumes where it stopped when more input arrives: a request of n
// bytes costs O(n) however it is split into reads, and a chunked body is
// decoded as it arrives (as ClientReader does). With DiscardBody the body
// is dropped as it arrives.
func (r *ServerReader) Next(req *Request) error {
	var (
		first     time.Time // when this request's clock started
		continued bool      // Expect: 100-continue was considered
	)
	if !r.started {
		first, r.started = r.opened, true
	}
	trim(&req.Message)
	r.begin()
	for {
		if r.b.End > r.b.Start {
			err := r.advance(req)
			if err != ErrIncomplete {
				return err
			}
			// The head is complete and the body is not.
			if r.pr.head > 0 && !continued {
				continued = true
				if r.sendContinue != nil && expectsContinue(req) {
					if err := r.sendContinue(); err != nil {
						return err
					}
				}
			}
		}
		if r.b.EOF {
			if r.b.End > r.b.Start {
				return io.ErrUnexpectedEOF
			}
			return io.EOF
		}
		now := time.Now()
		var err error
		switch {
		case r.b.End == r.b.Start && first.IsZero():
			err = r.b.setDeadline(r.c, now.Add(r.o.IdleTimeout), deadlineSlack)
		default:
			if first.IsZero() {
				first = now
			}
			limit := r.o.ReadTimeout
			if r.pr.head == 0 {
				limit = min(limit, r.o.ReadHeaderTimeout)
			}
			err = r.b.setDeadline(r.c, first.Add(limit), 0)
		}
		if err != nil {
			return err
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// Buffered returns the number of bytes received beyond the requests read so
// far: more than zero means pipelined requests are waiting, so a server may
// hold its responses and write them together.
func (r *ServerReader) Buffered() int { return r.b.End - r.b.Start }

// ClientReader reads responses from one backend connection.
type ClientReader struct{ reader }

// NewClientReader returns a reader of responses from c; o's MaxHeaderBytes
// and MaxBodyBytes bound each response.
func NewClientReader(c Conn, o Options) *ClientReader { return &ClientReader{newReader(c, o)} }

// Next reads the next response into resp, waiting until deadline at most;
// its slices are valid until the next call. It returns io.ErrUnexpectedEOF
// when the server closed before a whole response, and an error wrapping
// os.ErrDeadlineExceeded when the deadline passed. After an error the
// stream is out of step: Reset before reading again.
//
// Parsing resumes where it stopped when more input arrives: a response of n
// bytes costs O(n) however it is split into reads. A chunked body is
// decoded into resp as it arrives, so only its head and the undecoded
// remainder stay buffered.
func (r *ClientReader) Next(resp *Response, deadline time.Time) error {
	trim(&resp.Message)
	if err := r.b.setDeadline(r.c, deadline, 0); err != nil {
		return err
	}
	r.begin()
	for {
		if err := r.advance(resp); err != ErrIncomplete {
			return err
		}
		if r.b.EOF {
			return io.ErrUnexpectedEOF
		}
		if err := r.fill(); err != nil {
			return err
		}
	}
}

// Reset discards buffered input and reads from c from now on (a new
// backend connection after a failure).
func (r *ClientReader) Reset(c Conn) {
	r.c = c
	r.b.Start, r.b.End, r.b.EOF = 0, 0, false
	r.b.deadline = time.Time{}
}
