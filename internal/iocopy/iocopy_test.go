package iocopy

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// readerFromWriter counts the calls of its ReadFrom, which ThroughWrite
// must not make.
type readerFromWriter struct {
	bytes.Buffer
	readFroms int
}

func (w *readerFromWriter) ReadFrom(r io.Reader) (int64, error) {
	w.readFroms++
	return w.Buffer.ReadFrom(r)
}

// failAfter returns err once n bytes were written.
type failAfter struct {
	n   int
	err error
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, f.err
	}
	f.n -= len(p)
	return len(p), nil
}

func TestThroughWrite(t *testing.T) {
	big := strings.Repeat("x", 3*bufSize+7) // several buffers' worth
	errBoom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		src     string
		w       func() io.Writer
		wantN   int64
		wantErr error
	}{
		{"empty", "", func() io.Writer { return &readerFromWriter{} }, 0, nil},
		{"small", "hello", func() io.Writer { return &readerFromWriter{} }, 5, nil},
		{"several buffers", big, func() io.Writer { return &readerFromWriter{} }, int64(len(big)), nil},
		{"write fails midway", big, func() io.Writer { return &failAfter{n: bufSize + 3, err: errBoom} }, bufSize + 3, errBoom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w()
			n, err := ThroughWrite(w, strings.NewReader(tc.src))
			if n != tc.wantN || !errors.Is(err, tc.wantErr) {
				t.Fatalf("ThroughWrite: %d, %v; want %d, %v", n, err, tc.wantN, tc.wantErr)
			}
			if rw, ok := w.(*readerFromWriter); ok {
				if rw.readFroms != 0 {
					t.Errorf("the writer's ReadFrom was called %d times", rw.readFroms)
				}
				if rw.String() != tc.src {
					t.Errorf("copied %d bytes unlike the source's %d", rw.Len(), len(tc.src))
				}
			}
		})
	}
}
