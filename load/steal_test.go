package load

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/observe"
)

// stealRoot is the fake /proc of testdata/hoststeal/NAME.
func stealRoot(name string) string { return filepath.Join("testdata", "hoststeal", name) }

// reading is one /proc/stat fixture read at a time into the window.
type reading struct {
	root string
	at   time.Duration
}

// TestStealSampler: the steal of each sample from fixture /proc/stat
// files (USER_HZ ticks: 1 is 10 ms): totals per CPU, the most stolen in
// one sample with its CPU, start and length, the bursts, a CPU that comes
// or goes (no steal in a sample it is not in at both ends), a counter that
// goes back (clamped to 0, counted).
func TestStealSampler(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		readings []reading
		want     HostSteal
		line     string
	}{
		{"one reading", []reading{{"a", 0}},
			HostSteal{NA: "no sample in the window"}, "Host steal: n/a (no sample in the window)"},
		{"none", []reading{{"a", 0}, {"a", 100 * ms}, {"a", 200 * ms}},
			HostSteal{Samples: 2, SampleMs: 100, PerCPUMs: map[int]int64{0: 0, 1: 0}}, "Host steal: none"},
		{"a burst", []reading{{"a", 0}, {"b", 100 * ms}},
			HostSteal{Samples: 1, SampleMs: 100, TotalMs: 50, PerCPUMs: map[int]int64{0: 10, 1: 40},
				MaxMs: 40, MaxCPU: 1, MaxSampleMs: 100, Bursts: 1},
			"Host steal: 50 ms in the window (cpu1 40 ms in 100 ms at 0.0 s; 1 burst of 20 ms or more)"},
		{"a late sample", []reading{{"a", 0}, {"a", 100 * ms}, {"b", 350 * ms}},
			HostSteal{Samples: 2, SampleMs: 100, TotalMs: 50, PerCPUMs: map[int]int64{0: 10, 1: 40},
				MaxMs: 40, MaxCPU: 1, MaxAtS: 0.1, MaxSampleMs: 250, Bursts: 1},
			"Host steal: 50 ms in the window (cpu1 40 ms in 250 ms at 0.1 s; 1 burst of 20 ms or more)"},
		{"a tie goes to the lower CPU", []reading{{"a", 0}, {"tie", 100 * ms}},
			HostSteal{Samples: 1, SampleMs: 100, TotalMs: 80, PerCPUMs: map[int]int64{0: 40, 1: 40},
				MaxMs: 40, MaxCPU: 0, MaxSampleMs: 100, Bursts: 1},
			"Host steal: 80 ms in the window (cpu0 40 ms in 100 ms"},
		{"under a burst", []reading{{"b", 0}, {"c", 100 * ms}, {"d", 200 * ms}},
			HostSteal{Samples: 2, SampleMs: 100, TotalMs: 70, PerCPUMs: map[int]int64{0: 20, 1: 0, 2: 50},
				MaxMs: 50, MaxCPU: 2, MaxAtS: 0.1, MaxSampleMs: 100, Bursts: 1},
			"Host steal: 70 ms in the window (cpu2 50 ms in 100 ms at 0.1 s; 1 burst of 20 ms or more)"},
		// a->b: cpu0 10, cpu1 40; b->c: cpu2 comes (no steal yet); c->d:
		// cpu1 goes, cpu0 20, cpu2 50; d->e: cpu0 goes back (0, counted),
		// cpu1 comes back (no steal: d lacks it).
		{"CPUs come and go, a counter goes back", []reading{{"a", 0}, {"b", 100 * ms}, {"c", 200 * ms}, {"d", 300 * ms}, {"e", 400 * ms}},
			HostSteal{Samples: 4, SampleMs: 100, TotalMs: 120, PerCPUMs: map[int]int64{0: 30, 1: 40, 2: 50},
				MaxMs: 50, MaxCPU: 2, MaxAtS: 0.2, MaxSampleMs: 100, Bursts: 2, Backwards: 1},
			"Host steal: 120 ms in the window (cpu2 50 ms in 100 ms at 0.2 s; 2 bursts of 20 ms or more; a CPU's counter went back once, counted as 0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s stealSampler
			for _, r := range tc.readings {
				sr, err := observe.OpenStealReader(stealRoot(r.root))
				if err != nil {
					t.Fatal(err)
				}
				steal, err := sr.Read()
				sr.Close()
				if err != nil {
					t.Fatal(err)
				}
				s.add(r.at, steal)
			}
			got := s.result()
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tc.want)
			}
			if line := (&Result{HostSteal: got}).HostStealLine(); !strings.HasPrefix(line, tc.line) {
				t.Errorf("line %q, want %q", line, tc.line)
			}
		})
	}
}

// sampleSteal reads at the window's start and until its end; a proc root
// without a stat file, or a malformed one, gives n/a with the reason, and
// a run stopped before its window says so.
func TestSampleSteal(t *testing.T) {
	base := time.Now()
	clock := func() int64 { return int64(time.Since(base)) }
	for _, tc := range []struct {
		name, root, na string
		stopFirst      bool
	}{
		{"fixture", stealRoot("a"), "", false},
		{"no stat", t.TempDir(), "stat", false},
		{"malformed", stealRoot("bad"), "s into the window: testdata/hoststeal/bad/stat: \"cpu0 1", false},
		{"stopped in the warm-up", stealRoot("a"), "the run ended before its measured window", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := clock()
			measureAt, end := now+int64(20*time.Millisecond), now+int64(20*time.Millisecond+2*StealSample)
			stop := make(chan struct{})
			if tc.stopFirst {
				measureAt, end = now+int64(time.Hour), now+int64(2*time.Hour)
				close(stop)
			}
			done := make(chan *HostSteal, 1)
			go func() { done <- sampleSteal(tc.root, clock, measureAt, end, stop) }()
			var h *HostSteal
			select {
			case h = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("sampleSteal did not return 30 s after its window's end")
			}
			switch {
			case tc.na != "" && !strings.Contains(h.NA, tc.na):
				t.Errorf("n/a %q, want it to say %q", h.NA, tc.na)
			case tc.na != "" && (h.Samples != 0 || h.PerCPUMs != nil):
				t.Errorf("n/a with figures: %+v", h)
			case tc.na == "" && (h.NA != "" || h.Samples < 2 || h.TotalMs != 0 || len(h.PerCPUMs) != 2):
				// A fixture that never changes: at least the window's two
				// samples (a late sampler's may be longer), no steal.
				t.Errorf("fixture run: %+v", h)
			}
		})
	}
}

// HostStealLine renders n/a, merged parts and a result written before the
// field existed.
func TestHostStealLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *HostSteal
		want string
	}{
		{"an older result", nil, ""},
		{"n/a", &HostSteal{NA: "open /proc/stat: no such file or directory"}, "Host steal: n/a (open /proc/stat: no such file or directory)"},
		{"none of two", &HostSteal{Samples: 3, Parts: 2}, "Host steal: none (the most of 2 load generators)"},
		{"merged", &HostSteal{Samples: 3, TotalMs: 60, MaxMs: 60, MaxCPU: 3, MaxAtS: 9.25, MaxSampleMs: 100, Bursts: 1, Parts: 3, PartsNA: 1},
			"Host steal: 60 ms in the window (cpu3 60 ms in 100 ms at 9.2 s; 1 burst of 20 ms or more; the most of 3 load generators, 1 n/a)"},
		{"counters back", &HostSteal{Samples: 3, Backwards: 2}, "Host steal: none (CPUs' counters went back 2 times, counted as 0)"},
		{"no burst", &HostSteal{Samples: 3, TotalMs: 20, MaxMs: 10, MaxCPU: 0, MaxAtS: 1, MaxSampleMs: 100},
			"Host steal: 20 ms in the window (cpu0 10 ms in 100 ms at 1.0 s; no burst of 20 ms or more)"},
	} {
		if got := (&Result{HostSteal: tc.h}).HostStealLine(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A run reads the host steal of its measured window from Options.ProcRoot:
// /proc's when it can be read, n/a with the reason where it cannot; the text
// report has the line either way.
func TestHostStealRun(t *testing.T) {
	s := startServer(t, answerOK)
	for _, tc := range []struct {
		name, root string
	}{{"proc", ""}, {"no stat", t.TempDir()}} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root == "" {
				if _, err := observe.OpenStealReader(""); err != nil {
					t.Skipf("no /proc/stat here: %v", err)
				}
			}
			r, err := Run(context.Background(), Options{URL: s.url(), Threads: 1, Connections: 2, Rate: 100,
				Duration: 3 * StealSample, Warmup: 2 * StealSample, Timeout: time.Second, ProcRoot: tc.root}, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := r.HostSteal
			switch {
			case h == nil:
				t.Fatal("no host steal")
			case tc.root == "" && (h.NA != "" || h.Samples == 0 || len(h.PerCPUMs) == 0):
				t.Errorf("host steal from /proc: %+v", h)
			case tc.root != "" && !strings.Contains(h.NA, "stat"):
				t.Errorf("host steal without a stat file: %+v, want n/a with the reason", h)
			}
			if text := reportText(t, r); !strings.Contains(text, "  "+r.HostStealLine()+"\n") {
				t.Errorf("the text lacks %q:\n%s", r.HostStealLine(), text)
			}
			t.Log(r.HostStealLine())
		})
	}
}
