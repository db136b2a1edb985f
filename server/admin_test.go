package server

import (
	"context"
	"encoding/json"
	"errors"
	"math/bits"
	"net"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/rtmetrics"
	"github.com/spindle-lab/spindle/mock"
)

// The exported buckets are the telemetry's log2 buckets, cumulative, with
// exact integer edges: samples 0, 1, 2, 3, 4 and 1000 land at le 0, 1, 3,
// 3, 7 and 1023; those past the last edge only in the count (+Inf).
func TestHistogramEdges(t *testing.T) {
	var h carrier.Histogram
	for _, v := range []uint64{0, 1, 2, 3, 4, 1000, 1 << 40} {
		h.Buckets[bits.Len64(v)]++ // the telemetry's bucket of v
		h.Sum += v
	}
	d := prometheus.NewDesc("x", "x", []string{"carrier"}, nil)
	var m dto.Metric
	if err := histogram(d, h, 0, 10, 1, []string{"0"}).Write(&m); err != nil {
		t.Fatal(err)
	}
	got := map[float64]uint64{}
	for _, b := range m.Histogram.Bucket {
		got[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	want := map[float64]uint64{0: 1, 1: 2, 3: 4, 7: 5, 15: 5, 511: 5, 1023: 6}
	for le, n := range want {
		if got[le] != n {
			t.Errorf("le %v: %d, want %d (all: %v)", le, got[le], n, got)
		}
	}
	if len(got) != 11 || m.Histogram.GetSampleCount() != 7 || m.Histogram.GetSampleSum() != float64(h.Sum) {
		t.Errorf("%d buckets, count %d, sum %v", len(got), m.Histogram.GetSampleCount(), m.Histogram.GetSampleSum())
	}
	// Scaled: ns to seconds.
	if err := histogram(d, h, 7, 8, 1e-9, []string{"0"}).Write(&m); err != nil {
		t.Fatal(err)
	}
	if b := m.Histogram.Bucket[0]; b.GetUpperBound() != 127e-9 || b.GetCumulativeCount() != 5 {
		t.Errorf("first scaled bucket %v", b)
	}
}

// A pinned carrier has spindle_carrier_cpu with its CPU.
func TestCarrierCPUMetric(t *testing.T) {
	allowed, err := cpu.Allowed()
	if err != nil || len(allowed) == 0 {
		t.Skipf("no allowed CPUs: %v", err)
	}
	g, err := carrier.New(carrier.Options{Carriers: 1, CPUs: allowed[:1], Pin: carrier.PinCPU})
	if err != nil {
		t.Skipf("cannot pin a carrier here: %v", err)
	}
	defer g.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCarrierCollector(g))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() != "spindle_carrier_cpu" {
			continue
		}
		for _, m := range mf.Metric {
			found = true
			if len(m.Label) != 1 || m.Label[0].GetValue() != "0" || m.Gauge.GetValue() != float64(allowed[0]) {
				t.Errorf("spindle_carrier_cpu %v, want carrier 0 on CPU %d", m, allowed[0])
			}
		}
	}
	if !found {
		t.Error("no spindle_carrier_cpu for a pinned carrier")
	}
}

// BenchmarkHandled is what the request-duration histogram adds to every
// handled request: the clock readings around the handler and one
// observation, in the goroutine modes (goroutine: two readings and the
// HistogramVec) and in the carrier mode (carrier: one reading and the
// carrier's own part of the histogram;
// docs/PERFORMANCE.md, "Request-duration histogram").
func BenchmarkHandled(b *testing.B) {
	b.Run("goroutine", func(b *testing.B) {
		m := newMetrics("nethttp")
		b.ReportAllocs()
		for b.Loop() {
			start := wait.Now()
			m.handled(200, time.Duration(wait.Now()-start))
		}
	})
	b.Run("carrier", func(b *testing.B) {
		// The carrier mode's handler starts from the carrier's cached
		// clock (Task.Now) or the previous request's end: one reading.
		m := newMetrics("carrier")
		m.usePerCarrier(1)
		b.ReportAllocs()
		last := wait.Now()
		for b.Loop() {
			start := last
			last = wait.Now()
			m.handledOn(0, 200, time.Duration(last-start))
		}
	})
}

// /debug/runtime answers the runtime's metrics in every mode: the
// histograms with their buckets, a forced GC counted.
func TestAdminRuntime(t *testing.T) {
	forModes(t, func(t *testing.T, mode Mode) {
		e := setup(t, mode, mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0"})
		read := func() rtmetrics.Snapshot {
			var s rtmetrics.Snapshot
			if err := json.Unmarshal([]byte(adminGet(t, e, "/debug/runtime")), &s); err != nil {
				t.Fatal(err)
			}
			return s
		}
		before := read()
		runtime.GC() // the server runs in this process
		d, err := read().Sub(before)
		if err != nil {
			t.Fatal(err)
		}
		if d.GCCycles < 1 || d.GCCyclesForced < 1 || d.GCPauses.Total() < 1 || d.GOMAXPROCS != uint64(runtime.GOMAXPROCS(0)) ||
			len(d.SchedLatencies.Buckets) != len(d.SchedLatencies.Counts)+1 || len(d.SchedLatencies.Counts) == 0 {
			t.Errorf("/debug/runtime over a forced GC: %+v", d)
		}
	})
}

// The admin port is bound before the mode starts answering: a bench that
// saw /health answer reads /debug/carrier at once, and found the port
// closed once under -race on a loaded machine (TestMultiHost). A mode that
// dials the admin port as it starts must reach it; a server that fails to
// start closes it.
func TestAdminBoundBeforeTheMode(t *testing.T) {
	saved := slices.Clone(registered)
	t.Cleanup(func() { registered = saved })
	var dialed error = errors.New("the mode did not start")
	registered = append(registered, modeSpec{mode: "admin-probe", order: 99, start: func(s *Server) error {
		c, err := net.Dial("tcp", s.AdminAddr().String())
		if dialed = err; err == nil {
			c.Close()
		}
		return s.startCarriers()
	}}, modeSpec{mode: "admin-fail", order: 99, start: func(s *Server) error {
		return errors.New("refused")
	}})
	e := setup(t, "admin-probe", mock.Options{}, false, Options{AdminAddr: "127.0.0.1:0"})
	if dialed != nil {
		t.Errorf("the admin port as the mode started: %v", dialed)
	}
	if e.srv.AdminAddr() == nil {
		t.Fatal("no admin address")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the failing server's admin
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := Start(context.Background(), Options{Mode: "admin-fail", Addr: "127.0.0.1:0", AdminAddr: addr, Backend: "http://127.0.0.1:1/fruits", Threads: 1}); err == nil {
		t.Fatal("a mode that fails to start: no error")
	}
	ln, err = net.Listen("tcp", addr) // free again: the failed start closed it
	if err != nil {
		t.Errorf("the admin port after a failed start: %v", err)
	} else {
		ln.Close()
	}
}

// metrics.request counts every status code under its own label: those the
// server writes through their pre-resolved children, any other (in the
// children's range or not) through the vector.
func TestMetricsRequestCodes(t *testing.T) {
	m := newMetrics("carrier")
	codes := []int{200, 200, 502, 418, 599, 600, 999, -1}
	for _, code := range codes {
		m.request(code)
	}
	for _, tc := range []struct {
		label string
		want  float64
	}{{"200", 2}, {"502", 1}, {"418", 1}, {"599", 1}, {"600", 1}, {"999", 1}, {"-1", 1}, {"404", 0}} {
		var out dto.Metric
		if err := m.requests.WithLabelValues(tc.label).Write(&out); err != nil {
			t.Fatal(err)
		}
		if got := out.GetCounter().GetValue(); got != tc.want {
			t.Errorf("code %s: counted %v, want %v", tc.label, got, tc.want)
		}
	}
}
