package carrierhttp

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/mock"
)

// BenchmarkRoundTrip measures the nethttp-carrier mode's backend call as
// its handler makes it (server.netBackend.get: a context with a deadline,
// http.Client.Do, the body read whole, Close) from a task, against
// spindle's mock answering /fruits at once, over one keep-alive
// connection. Allocations are the whole process's (the mock allocates
// nothing per request). On an idle carrier (idle: it waits for each
// answer) the exchange's context watch is registered with
// context.AfterFunc; on a busy one (busy: another task keeps yielding) the
// carrier polls it instead, as in a loaded server.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("idle", func(b *testing.B) { benchRoundTrip(b, false) })
	b.Run("busy", func(b *testing.B) { benchRoundTrip(b, true) })
}

func benchRoundTrip(b *testing.B, busy bool) {
	url := startMock(b)
	tr := &Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	inTask(b, func(task *carrier.Task) {
		if busy {
			var stop atomic.Bool
			defer stop.Store(true)
			task.Go(func(t *carrier.Task) {
				for end := time.Now().Add(time.Minute); !stop.Load() && time.Now().Before(end); {
					t.Yield()
				}
			})
		}
		base := carrier.ContextWithTask(context.Background(), task)
		buf := make([]byte, 4<<10)
		call := func() error {
			ctx, cancel := context.WithTimeout(base, 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			n, err := io.ReadFull(resp.Body, buf[:len(mock.Body)])
			if err != nil || n != len(mock.Body) {
				return err
			}
			if _, err := resp.Body.Read(buf); err != io.EOF {
				b.Errorf("body longer than the mock's: %v", err)
			}
			return nil
		}
		if err := call(); err != nil { // dial outside the measurement
			b.Error(err)
			return
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if err := call(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
