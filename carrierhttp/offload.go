package carrierhttp

import (
	"io"
	"maps"
	"net/http"

	"github.com/spindle-lab/spindle/carrier"
)

// OffloadHandler runs h on a plain goroutine (carrier.Task.Offload), where
// it may block the Go way (channels, mutexes, time.Sleep, database/sql,
// net.Conn) without holding its carrier: the design of spindle's handoff
// mode. The task parks meanwhile and the carrier serves others.
//
// The goroutine cannot do the connection's I/O, which belongs to the task,
// so the request body is read in full before h runs (bounded by the
// server's MaxBodyBytes, if set), and h's answer is held until it returns
// (Flush sends nothing early). Outside a carrier task it calls h directly.
func OffloadHandler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := carrier.TaskFromContext(r.Context())
		if t == nil {
			h.ServeHTTP(w, r)
			return
		}
		var body []byte
		if r.Body != nil && r.Body != http.NoBody {
			var err error
			if body, err = io.ReadAll(r.Body); err != nil {
				http.Error(w, "cannot read the request body", http.StatusBadRequest)
				return
			}
		}
		r2 := *r // shallow: h sees its own Body
		r2.Body = io.NopCloser(&sliceReader{b: body})
		if body == nil {
			r2.Body = http.NoBody
		}
		ow := &heldResponse{header: http.Header{}}
		t.Offload(func() { h.ServeHTTP(ow, &r2) })
		maps.Copy(w.Header(), ow.header)
		if ow.status != 0 {
			w.WriteHeader(ow.status)
		}
		w.Write(ow.body)
	})
}

// sliceReader reads a byte slice (bytes.Reader without its extras).
type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// heldResponse is the ResponseWriter of an offloaded handler: it holds the
// status, header and body for the task to send.
type heldResponse struct {
	header http.Header
	status int
	body   []byte
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(code int) {
	if h.status == 0 && (code < 100 || code > 199) {
		h.status = code
	}
}

func (h *heldResponse) Write(p []byte) (int, error) {
	if h.status == 0 {
		h.status = http.StatusOK
	}
	h.body = append(h.body, p...)
	return len(p), nil
}

// Flush does nothing: the answer is sent when the handler returns.
func (h *heldResponse) Flush() {}
