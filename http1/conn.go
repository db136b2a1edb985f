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

// Clock is a connection that tells the time its deadlines are armed from
// more cheaply than time.Now: a carrier.Conn used by a task of its carrier
// returns that carrier's latest clock reading. ServerReader and ServeConn
// take the time from a connection that is one (idle and request deadlines,
// write deadlines, the Date header), and from time.Now otherwise.
type Clock interface{ Now() time.Time }

// clockOf is c's Now when c is a Clock, else time.Now.
func clockOf(c any) func() time.Time {
	if k, ok := c.(Clock); ok {
		return k.Now
	}
	return time.Now
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

// Source is where a connection's input comes from for the loops that read
// it (HeadParser's ReadRequest and ReadResponse, BodyReader.Next): Refill
// reads once from the connection into in's free space, which the loop
// made (InBuf.Fill does that read), setting in.EOF at the end of the
// stream. Its error ends the loop, which returns it as it is. http1's
// readers arm their read deadlines in their Refill; carrierhttp's
// connections write out their queued output and park their task in
// theirs.
type Source interface {
	Refill(in *InBuf) error
}

// ReadRequest is the head-reading loop for requests: it reads from src
// into in until in's pending input begins with a whole request head,
// parses it into r as ParseRequest (the method) does and returns its
// length; the head stays pending, for the caller to consume. It returns
// io.EOF when the input ended before a byte of a request,
// io.ErrUnexpectedEOF when it ended within the head, an *Error for a
// request to refuse, or src's error. The buffer grows up to
// o.MaxHeaderBytes and a read's worth of what follows the head. ServerReader
// and carrierhttp's Server read their requests with it.
func (p *HeadParser) ReadRequest(in *InBuf, src Source, r *Request, o Options) (int, error) {
	return p.read(in, src, r, nil, false, o)
}

// ReadResponse is ReadRequest for a response head, parsed as Parse does it
// (head marks the answer to HEAD). ClientReader and carrierhttp's Transport
// read their responses with it.
func (p *HeadParser) ReadResponse(in *InBuf, src Source, r *Response, head bool, o Options) (int, error) {
	return p.read(in, src, nil, r, head, o)
}

// read is the loop of ReadRequest (req set) and ReadResponse (resp set).
func (p *HeadParser) read(in *InBuf, src Source, req *Request, resp *Response, head bool, o Options) (int, error) {
	p.Reset()
	for {
		if in.End > in.Start {
			var n int
			var err error
			if req != nil {
				n, err = p.ParseRequest(in.Buf[in.Start:in.End], req, o)
			} else {
				n, err = p.Parse(in.Buf[in.Start:in.End], resp, head, o)
			}
			if err != ErrIncomplete {
				return n, err
			}
		}
		if in.EOF {
			if in.End > in.Start {
				return 0, io.ErrUnexpectedEOF
			}
			return 0, io.EOF
		}
		if in.Room(headLimit(o) + initialBuffer) {
			p.Reset() // the lines parsed moved: parse them again
		}
		if err := src.Refill(in); err != nil {
			return 0, err
		}
	}
}

// buffer is a reader's InBuf with its read deadline.
type buffer struct {
	InBuf
	deadline time.Time // read deadline last set on the connection
}

func (b *buffer) pending() []byte { return b.Buf[b.Start:b.End] }

// refill makes room, growing the buffer up to limit bytes, and reads once
// with src; it reports whether pending input moved (slices into it are
// stale then). A buffer already at limit bytes and full of one message is
// errTooLarge (the callers' parsers refuse before this).
func (b *buffer) refill(src Source, limit int) (bool, error) {
	if b.Buf != nil && b.End == len(b.Buf) && b.Start == 0 && len(b.Buf) >= limit {
		return false, errTooLarge
	}
	moved := b.Room(limit)
	return moved, src.Refill(&b.InBuf)
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
// progress of the message being read.
type reader struct {
	c  Conn
	o  Options
	b  buffer
	pr progress
	// sendContinue, when set, writes "100 Continue" (ServeConn sets it on
	// its ServerReader, so that the interim response follows the responses
	// it still holds).
	sendContinue func() error
}

// progress is how far a reader got with the message it is reading. It
// lives in the reader, not on the stack, because the head parser is handed
// to an incoming's method, which escape analysis cannot see through.
type progress struct {
	hp   HeadParser
	head int        // length of the head once read, else 0
	seen int        // pending bytes taken so far: the head, then body bytes or chunked framing
	body BodyReader // the body's framing
}

// incoming is a message a reader takes from its connection: a *Request or
// a *Response.
type incoming interface {
	message() *Message
	// readHead reads the head with hp's loop (ReadRequest, ReadResponse);
	// over a head already pending whole it only parses it.
	readHead(hp *HeadParser, in *InBuf, src Source, o Options) (int, error)
	// expectsContinue reports whether the message asks for "100 Continue"
	// before its body.
	expectsContinue() bool
}

func (m *Message) message() *Message { return m }

func (r *Request) readHead(hp *HeadParser, in *InBuf, src Source, o Options) (int, error) {
	return hp.ReadRequest(in, src, r, o)
}

// readHead reads the head of a response to a GET (a reader's client asks
// nothing else).
func (r *Response) readHead(hp *HeadParser, in *InBuf, src Source, o Options) (int, error) {
	return hp.ReadResponse(in, src, r, false, o)
}

// expectsContinue is false: a response asks nothing.
func (r *Response) expectsContinue() bool { return false }

func newReader(c Conn, o Options) reader { return reader{c: c, o: o.WithDefaults()} }

// plainSource is a reader as the Source of its loops when its deadline
// stays as it is between reads (ClientReader's).
type plainSource reader

func (s *plainSource) Refill(in *InBuf) error {
	_, err := in.Fill(s.c) // at end of file in.EOF says it
	return err
}

// trim drops m's chunked-body scratch buffer when a large body grew it, so
// a connection keeps at most keepBuffer bytes of it between messages.
func trim(m *Message) {
	if cap(m.chunks) > keepBuffer {
		m.chunks = nil
	}
}

// read reads the next message into m, reading with src: its head with the
// head-reading loop, then its body, framed by a BodyReader as it arrives,
// so a message of n bytes costs O(n) however it is split into reads. A
// chunked body is decoded into m as it arrives, and with DiscardBody body
// bytes are dropped as they arrive, so only the head and the undecoded
// remainder stay buffered. It returns nil once m is complete (and
// consumed from the buffer), or the error that ends reading it.
func (r *reader) read(m incoming, src Source) error {
	pr, msg := &r.pr, m.message()
	trim(msg)
	pr.head, pr.seen = 0, 0
	n, err := m.readHead(&pr.hp, &r.b.InBuf, src, r.o)
	if err != nil {
		return err
	}
	pr.head, pr.seen = n, n
	msg.chunks = msg.chunks[:0]
	pr.body.MaxBody = r.o.MaxBodyBytes
	pr.body.Reset(msg.ContentLength, msg.Chunked)
	limit := r.o.MaxHeaderBytes + int(r.o.MaxBodyBytes) + maxChunkExcess + initialBuffer
	for waited := false; ; waited = true {
		seen, done, err := takeBody(&pr.body, msg, r.b.pending(), pr.head, pr.seen, r.b.EOF, r.o.DiscardBody)
		switch {
		case err != nil:
			return err
		case done:
			r.b.Consume(seen)
			return nil
		}
		pr.seen = seen
		if msg.Chunked || r.o.DiscardBody {
			// Every byte taken was decoded or dropped: keep only the
			// head buffered.
			r.b.End = r.b.Start + pr.head
			pr.seen = pr.head
		}
		if !waited && r.sendContinue != nil && m.expectsContinue() {
			if err := r.sendContinue(); err != nil {
				return err
			}
		}
		if r.b.EOF {
			return io.ErrUnexpectedEOF
		}
		moved, err := r.b.refill(src, limit)
		if err != nil {
			return err
		}
		if moved { // m's slices into the input are stale: parse the head again
			if _, err := m.readHead(&pr.hp, &r.b.InBuf, src, r.o); err != nil {
				return err // cannot be: these bytes parsed before
			}
		}
	}
}

// ServerReader reads pipelined requests from one client connection,
// enforcing Options' limits and timeouts. It allocates its buffer once and
// reuses it.
type ServerReader struct {
	reader
	// beforeWait, when set, runs before each read from the connection
	// (ServeConn writes out the responses it holds: a client may wait for
	// them before it sends the rest of a request begun in the buffer).
	beforeWait func() error
	now        func() time.Time // the connection's clock (clockOf)
	opened     time.Time        // when the reader was made: the connection's accept
	started    bool             // a request was begun: later waits are idle
	first      time.Time        // when the clock of the request being read started; zero: idle
}

// NewServerReader returns a reader of requests from c, a connection
// accepted now: its first request's timeouts run from now.
func NewServerReader(c Conn, o Options) *ServerReader {
	now := clockOf(c)
	return &ServerReader{reader: newReader(c, o), now: now, opened: now()}
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
	r.first = time.Time{}
	if !r.started {
		r.first, r.started = r.opened, true
	}
	return r.read(req, (*serverSource)(r))
}

// serverSource is a ServerReader as the Source of its loops: each read
// waits under the deadline of Options for it.
type serverSource ServerReader

// Refill arms the idle deadline while no byte of a request has come (after
// the first request), else the head's or the whole request's from the
// request's first byte (for the first request: from the accept), then
// reads.
func (s *serverSource) Refill(in *InBuf) error {
	r := (*ServerReader)(s)
	if r.beforeWait != nil {
		if err := r.beforeWait(); err != nil {
			return err
		}
	}
	now := r.now()
	var err error
	switch {
	case in.End == in.Start && r.first.IsZero():
		err = r.b.setDeadline(r.c, now.Add(r.o.IdleTimeout), deadlineSlack)
	default:
		if r.first.IsZero() {
			r.first = now
		}
		limit := r.o.ReadTimeout
		if r.pr.head == 0 {
			limit = min(limit, r.o.ReadHeaderTimeout)
		}
		err = r.b.setDeadline(r.c, r.first.Add(limit), 0)
	}
	if err != nil {
		return err
	}
	return (*plainSource)(&r.reader).Refill(in)
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
// its slices are valid until the next call. Interim (1xx) responses before
// it other than 101 are read and dropped, as a client must take ones it
// did not ask for (RFC 9110 §15.2; "103 Early Hints", a "100 Continue"),
// up to max1xx of them; 101 is returned. It returns io.ErrUnexpectedEOF
// when the server closed before a whole response, and an error wrapping
// os.ErrDeadlineExceeded when the deadline passed. After an error the
// stream is out of step: Reset before reading again.
//
// Parsing resumes where it stopped when more input arrives: a response of n
// bytes costs O(n) however it is split into reads. A chunked body is
// decoded into resp as it arrives, so only its head and the undecoded
// remainder stay buffered.
func (r *ClientReader) Next(resp *Response, deadline time.Time) error {
	if err := r.b.setDeadline(r.c, deadline, 0); err != nil {
		return err
	}
	for interim := 0; ; interim++ {
		err := r.read(resp, (*plainSource)(&r.reader))
		switch {
		case err == io.EOF:
			return io.ErrUnexpectedEOF // closed before a response
		case err != nil || resp.Status/100 != 1 || resp.Status == 101:
			return err
		case interim == max1xx:
			return fmt.Errorf("http1: more than %d interim (1xx) responses", max1xx)
		}
	}
}

// max1xx bounds the interim responses ClientReader.Next drops before a
// response: a server that sends them without end is broken.
const max1xx = 5

// Reset discards buffered input and reads from c from now on (a new
// backend connection after a failure).
func (r *ClientReader) Reset(c Conn) {
	r.c = c
	r.b.Start, r.b.End, r.b.EOF = 0, 0, false
	r.b.deadline = time.Time{}
}
