// Package iocopy is the copy through Write that an io.ReaderFrom falls
// back to (carrier.Conn's and carrierhttp's ResponseWriter's, for readers
// that are not files): io.Copy's, with a pooled buffer and the writer's
// own ReadFrom hidden, which io.Copy would otherwise call again.
package iocopy

import (
	"io"
	"sync"
)

// bufSize is the copy's buffer (io.Copy's and net/http's).
const bufSize = 32 << 10

// bufs holds the copies' buffers, so that a copy does not allocate one.
var bufs = sync.Pool{New: func() any { return new([bufSize]byte) }}

// writerOnly hides its writer's ReadFrom.
type writerOnly struct{ io.Writer }

// ThroughWrite copies src to w with w's Write until src's end, as io.Copy
// does when w has no ReadFrom; it returns the bytes copied and the first
// error other than io.EOF.
func ThroughWrite(w io.Writer, src io.Reader) (int64, error) {
	buf := bufs.Get().(*[bufSize]byte)
	defer bufs.Put(buf)
	return io.CopyBuffer(writerOnly{w}, src, buf[:])
}
