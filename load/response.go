package load

import (
	"bytes"
	"errors"
)

// errParse is wrapped by every response parse error.
var errParse = errors.New("malformed response")

// Parser limits: a status line or header line longer than maxLine, or a
// header block larger than maxHeader, is treated as malformed rather than
// buffered without bound. They are far above what real servers send.
const (
	maxLine   = 8 << 10
	maxHeader = 64 << 10
	// maxChunkHex bounds a chunk-size line's hex digits (15 digits < 2^60).
	maxChunkHex = 15
)

// parser states.
const (
	stVersion     uint8 = iota // "HTTP/1.x"
	stStatusSP                 // the space after the version
	stStatusCode               // three digits
	stReason                   // reason phrase up to LF
	stLineStart                // start of a header line (or the blank line)
	stHeadEndLF                // CR seen at a line start: expect LF
	stName                     // header name up to ':'
	stValue                    // header value up to LF
	stBody                     // Content-Length body
	stBodyEOF                  // body delimited by connection close
	stChunkSize                // chunk size hex digits
	stChunkExt                 // chunk extension up to LF
	stChunkData                // chunk data
	stChunkCR                  // CRLF after chunk data
	stChunkLF                  // LF after chunk data
	stTrailer                  // trailer line start
	stTrailerLine              // inside a trailer line
	stTrailerLF                // CR seen at a trailer line start: expect LF
	stDone                     // response complete
)

// header kinds the parser acts on.
const (
	hdrOther uint8 = iota
	hdrContentLength
	hdrTransferEncoding
	hdrConnection
)

const versionPrefix = "HTTP/1."

// responseParser parses one HTTP/1.1 response incrementally, from bytes fed
// in pieces of any size. It keeps no reference to the fed bytes and does not
// allocate: header names and the values it needs are matched on the fly.
// After a complete response, reset prepares it for the next one.
type responseParser struct {
	state   uint8
	hdr     uint8 // kind of the header being read
	minor   byte  // HTTP/1.minor
	nameLen int
	name    [len("transfer-encoding")]byte
	nameBad bool // name longer than any we act on
	value   [32]byte
	valLen  int

	head    bool // response to a HEAD request: no body
	status  int
	lineLen int
	headLen int

	contentLength int64 // -1: none
	remaining     int64
	chunkDigits   int
	chunked       bool
	closeConn     bool // "Connection: close" (or HTTP/1.0 without keep-alive)
	keepAlive     bool // "Connection: keep-alive"
	sawCL         bool
}

// reset prepares p for the next response; head marks a HEAD request.
func (p *responseParser) reset(head bool) {
	*p = responseParser{head: head, contentLength: -1}
}

// done reports whether a whole response was parsed.
func (p *responseParser) done() bool { return p.state == stDone }

// keepAliveAfter reports whether the connection may carry another request
// after this response: HTTP/1.1 unless "Connection: close", HTTP/1.0 only
// with "Connection: keep-alive", never after a body delimited by close.
func (p *responseParser) keepAliveAfter() bool {
	if p.closeConn {
		return false
	}
	if p.minor == '0' {
		return p.keepAlive
	}
	return true
}

// feed parses b. It returns how many bytes it consumed; when the response is
// complete (done), bytes after it are left unconsumed.
func (p *responseParser) feed(b []byte) (int, error) {
	i := 0
	for i < len(b) {
		switch p.state {
		case stBody, stChunkData:
			// Skip body bytes; the end of a Content-Length body ends the
			// response, the end of a chunk expects its CRLF.
			n := min(int64(len(b)-i), p.remaining)
			i += int(n)
			p.remaining -= n
			if p.remaining > 0 {
				continue
			}
			if p.state == stChunkData {
				p.state = stChunkCR
				continue
			}
			p.state = stDone
			return i, nil
		case stBodyEOF:
			return len(b), nil
		case stDone:
			return i, nil
		case stName:
			// Take the name up to ':' in one go.
			j := i
			for j < len(b) && b[j] != ':' {
				c := b[j]
				if c == '\r' || c == '\n' || c == ' ' || c == '\t' {
					return j, errParse
				}
				p.addName(c)
				j++
			}
			if err := p.count(j - i); err != nil {
				return j, err
			}
			i = j
			if i == len(b) {
				continue
			}
			// The ':' goes through step below.
		case stValue, stReason, stTrailerLine, stChunkExt:
			// Skip quickly to the end of the line.
			j := bytes.IndexByte(b[i:], '\n')
			end := len(b)
			if j >= 0 {
				end = i + j
			}
			if p.state == stValue {
				p.appendValue(b[i:end])
			}
			if err := p.count(end - i); err != nil {
				return i, err
			}
			i = end
			if j < 0 {
				continue
			}
			i++ // the LF
			if err := p.endLine(); err != nil {
				return i, err
			}
			if p.state == stDone {
				return i, nil
			}
			continue
		}
		c := b[i]
		i++
		if err := p.count(1); err != nil {
			return i, err
		}
		if err := p.step(c); err != nil {
			return i, err
		}
		if p.state == stDone {
			return i, nil
		}
	}
	return i, nil
}

// count charges n bytes to the current line and header block limits.
func (p *responseParser) count(n int) error {
	p.lineLen += n
	if p.state < stBody {
		p.headLen += n
	}
	if p.lineLen > maxLine || p.headLen > maxHeader {
		return errParse
	}
	return nil
}

func (p *responseParser) step(c byte) error {
	switch p.state {
	case stVersion:
		if p.lineLen <= len(versionPrefix) {
			if c != versionPrefix[p.lineLen-1] {
				return errParse
			}
			return nil
		}
		if c != '0' && c != '1' {
			return errParse
		}
		p.minor = c
		p.state = stStatusSP
	case stStatusSP:
		if c != ' ' {
			return errParse
		}
		p.state = stStatusCode
	case stStatusCode:
		if c < '0' || c > '9' {
			return errParse
		}
		p.status = p.status*10 + int(c-'0')
		if p.lineLen == len(versionPrefix)+1+1+3 {
			if p.status < 100 {
				return errParse
			}
			p.state = stReason
		}
	case stLineStart:
		switch c {
		case '\r':
			p.state = stHeadEndLF
		case '\n':
			return p.endHeaders()
		case ' ', '\t': // obsolete line folding: continuation of an ignored value
			p.hdr = hdrOther
			p.state = stValue
		case ':':
			return errParse
		default:
			p.nameLen, p.nameBad = 0, false
			p.addName(c)
			p.state = stName
		}
	case stHeadEndLF:
		if c != '\n' {
			return errParse
		}
		return p.endHeaders()
	case stName:
		switch c {
		case ':':
			p.hdr = p.classify()
			p.valLen = 0
			p.state = stValue
		case '\r', '\n', ' ', '\t':
			return errParse
		default:
			p.addName(c)
		}
	case stChunkSize:
		v, ok := unhex(c)
		switch {
		case ok:
			p.chunkDigits++
			if p.chunkDigits > maxChunkHex {
				return errParse
			}
			p.remaining = p.remaining<<4 | int64(v)
		case p.chunkDigits == 0:
			return errParse
		case c == ';' || c == ' ' || c == '\t':
			p.state = stChunkExt
		case c == '\r':
			p.state = stChunkExt
		case c == '\n':
			return p.endLine()
		default:
			return errParse
		}
	case stChunkCR:
		switch c {
		case '\r':
			p.state = stChunkLF
		case '\n':
			p.startChunk()
		default:
			return errParse
		}
	case stChunkLF:
		if c != '\n' {
			return errParse
		}
		p.startChunk()
	case stTrailer:
		switch c {
		case '\r':
			p.state = stTrailerLF
		case '\n':
			p.state = stDone
		default:
			p.state = stTrailerLine
		}
	case stTrailerLF:
		if c != '\n' {
			return errParse
		}
		p.state = stDone
	}
	return nil
}

func (p *responseParser) startChunk() {
	p.state = stChunkSize
	p.remaining, p.chunkDigits, p.lineLen = 0, 0, 0
}

// endLine handles the LF ending a status, header, chunk-size or trailer line.
func (p *responseParser) endLine() error {
	switch p.state {
	case stReason:
		p.state = stLineStart
	case stValue:
		if err := p.applyHeader(); err != nil {
			return err
		}
		p.state = stLineStart
	case stChunkExt, stChunkSize:
		if p.remaining == 0 {
			p.state = stTrailer
		} else {
			p.state = stChunkData
		}
	case stTrailerLine:
		p.state = stTrailer
	}
	p.lineLen = 0
	return nil
}

func (p *responseParser) addName(c byte) {
	if p.nameLen >= len(p.name) {
		p.nameBad = true
		return
	}
	p.name[p.nameLen] = lower(c)
	p.nameLen++
}

func (p *responseParser) classify() uint8 {
	if p.nameBad {
		return hdrOther
	}
	switch string(p.name[:p.nameLen]) { // no allocation: compared in place
	case "content-length":
		return hdrContentLength
	case "transfer-encoding":
		return hdrTransferEncoding
	case "connection":
		return hdrConnection
	}
	return hdrOther
}

// appendValue keeps the first bytes of a value the parser acts on, lowercased.
func (p *responseParser) appendValue(b []byte) {
	if p.hdr == hdrOther {
		return
	}
	for _, c := range b {
		if p.valLen >= len(p.value) {
			if p.hdr == hdrContentLength {
				p.valLen = len(p.value) + 1 // too long: rejected in applyHeader
			}
			return
		}
		p.value[p.valLen] = lower(c)
		p.valLen++
	}
}

func (p *responseParser) applyHeader() error {
	if p.hdr == hdrOther {
		return nil
	}
	if p.valLen > len(p.value) {
		return errParse
	}
	v := trimSpace(p.value[:p.valLen])
	switch p.hdr {
	case hdrContentLength:
		if len(v) == 0 || len(v) > 18 { // 18 digits cannot overflow int64
			return errParse
		}
		var n int64
		for _, c := range v {
			if c < '0' || c > '9' {
				return errParse
			}
			n = n*10 + int64(c-'0')
		}
		if p.sawCL && n != p.contentLength {
			return errParse
		}
		p.sawCL, p.contentLength = true, n
	case hdrTransferEncoding:
		if bytes.Contains(v, []byte("chunked")) {
			p.chunked = true
		}
	case hdrConnection:
		if bytes.Contains(v, []byte("close")) {
			p.closeConn = true
		}
		if bytes.Contains(v, []byte("keep-alive")) {
			p.keepAlive = true
		}
	}
	return nil
}

// endHeaders decides how the body is delimited (RFC 9112 section 6.3).
func (p *responseParser) endHeaders() error {
	p.lineLen = 0
	switch {
	case p.status == 101:
		return errParse // protocol switches are not supported
	case p.status < 200:
		// Interim response (100 Continue, 103 Early Hints): the final one follows.
		head := p.head
		p.reset(head)
		return nil
	case p.head || p.status == 204 || p.status == 304:
		p.state = stDone
	case p.chunked:
		p.startChunk()
	case p.contentLength == 0:
		p.state = stDone
	case p.contentLength > 0:
		p.remaining = p.contentLength
		p.state = stBody
	default:
		p.closeConn = true
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

// trimSpace drops spaces, tabs and CRs around v (bytes.Trim builds a set
// on every call; this is the hot path).
func trimSpace(v []byte) []byte {
	for len(v) > 0 && (v[0] == ' ' || v[0] == '\t' || v[0] == '\r') {
		v = v[1:]
	}
	for len(v) > 0 && (v[len(v)-1] == ' ' || v[len(v)-1] == '\t' || v[len(v)-1] == '\r') {
		v = v[:len(v)-1]
	}
	return v
}

// lower lowercases an ASCII letter.
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
