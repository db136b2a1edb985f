package observe

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// statRoot writes stat as the stat file of a fake /proc and returns its root.
func statRoot(t *testing.T, stat string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "stat"), []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestStealPercent(t *testing.T) {
	// USER_HZ is 100: 1000 ticks are 10 s.
	const a = "cpu  100 0 50 800 10 0 5 35 7 0\ncpu0 50 0 25 400 5 0 2 18 7 0\ncpu1 50 0 25 400 5 0 3 17 0 0\nintr 1 2\n"
	const b = "cpu  200 0 100 1600 20 0 10 70 9 0\ncpu0 100 0 50 800 10 0 5 35 9 0\ncpu1 100 0 50 800 10 0 5 35 0 0\n"
	sa, err := ReadStatTimes(statRoot(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if sa.All.Total != 10 || sa.All.Busy != 1.9 || sa.All.Steal != 0.35 || len(sa.PerCPU) != 2 || sa.PerCPU[1].Steal != 0.17 {
		t.Fatalf("read %+v", sa)
	}
	sb, err := ReadStatTimes(statRoot(t, b))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		a, b StatTimes
		cpus []int
		want string
	}{
		{"all", sa, sb, nil, "3.5%"},
		{"cpu1", sa, sb, []int{1}, "3.6%"},
		{"missing CPU", sa, sb, []int{5}, "n/a (no cpu5"},
		{"same reading", sa, sa, nil, "n/a (no clock ticks"},
		{"since boot", StatTimes{}, sa, nil, "3.5%"},
	}
	for _, tt := range tests {
		if got := StealText(StealPercent(tt.a, tt.b, tt.cpus)); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestBusyShare(t *testing.T) {
	// cpu0 runs 80 of 100 ticks (10 of them stolen) and waits 10 for I/O, cpu1 runs 10.
	const a = "cpu  0 0 0 200 0 0 0 0 0 0\ncpu0 0 0 0 100 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n"
	const b = "cpu  80 0 0 300 10 0 0 10 0 0\ncpu0 70 0 0 110 10 0 0 10 0 0\ncpu1 10 0 0 190 0 0 0 0 0 0\n"
	sa, err := ReadStatTimes(statRoot(t, a))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ReadStatTimes(statRoot(t, b))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cpus    []int
		want    float64
		wantErr string
	}{
		{"cpu0: steal is busy, iowait is not", []int{0}, 0.8, ""},
		{"cpu1", []int{1}, 0.1, ""},
		{"both", []int{0, 1}, 0.45, ""},
		{"all", nil, 0.45, ""},
		{"missing CPU", []int{0, 7}, 0, "no cpu7 line"},
	}
	for _, tt := range tests {
		got, err := BusyShare(sa, sb, tt.cpus)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, %v; want an error with %q", tt.name, got, err, tt.wantErr)
			}
		case err != nil || math.Abs(got-tt.want) > 1e-9:
			t.Errorf("%s: %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := BusyShare(sa, sa, nil); err == nil {
		t.Error("the same reading twice: want an error")
	}
}

func TestReadStatTimesBad(t *testing.T) {
	for _, bad := range []string{"cpu 1 2 x 4\n", "cpux 1 2 3 4\n"} {
		if st, err := ReadStatTimes(statRoot(t, bad)); err == nil {
			t.Errorf("%q: want an error, got %+v", bad, st)
		}
	}
	if _, err := ReadStatTimes(t.TempDir()); err == nil {
		t.Error("no stat file: want an error")
	}
}

func TestReadStatTimesThisMachine(t *testing.T) {
	st, err := ReadStatTimes("")
	if err != nil {
		t.Fatal(err)
	}
	if st.All.Total == 0 || len(st.PerCPU) == 0 {
		t.Fatalf("empty /proc/stat reading: %+v", st)
	}
}

func TestParseSteal(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []int64
		err      string
	}{
		{"two CPUs", "cpu  1 2 3 4 5 6 7 35 0 0\ncpu0 1 2 3 4 5 6 7 18 0 0\ncpu1 1 2 3 4 5 6 7 17 0 0\nintr 1 2\n", []int64{18, 17}, ""},
		{"an offline CPU", "cpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 9 1 1", []int64{8, -1, 9}, ""},
		{"no cpu lines", "intr 1 2\nctxt 5\n", []int64{}, ""},
		{"empty", "", []int64{}, ""},
		{"seven fields", "cpu0 1 2 3 4 5 6 7\n", nil, "field 8 is not a counter"},
		{"a letter", "cpu0 1 2 x 4 5 6 7 8\n", nil, "field 3 is not a counter"},
		{"a negative counter", "cpu0 1 2 3 4 5 6 7 -8\n", nil, "field 8 is not a counter"},
		{"overflow", "cpu0 1 2 3 4 5 6 7 99999999999999999999\n", nil, "field 8"},
		{"bad CPU number", "cpu0x 1 2 3 4 5 6 7 8\n", nil, "bad CPU number"},
		{"huge CPU number", "cpu99999999 1 2 3 4 5 6 7 8\n", nil, "bad CPU number"},
		{"listed twice", "cpu1 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\n", nil, "cpu1 is listed twice"},
	} {
		got, err := parseSteal([]byte(tc.in), nil)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err == "" && !slices.Equal(got, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// parseSteal agrees with procfs (ReadStatTimes) on the steal of each CPU,
// here and in a fixture, and StealReader reads the file again each time
// without allocating.
func TestStealReader(t *testing.T) {
	const fixture = "cpu  100 0 50 800 10 0 5 35 7 0\ncpu0 50 0 25 400 5 0 2 18 7 0\ncpu3 50 0 25 400 5 0 3 17 0 0\nintr 1 2\n"
	for _, root := range []string{statRoot(t, fixture), ""} {
		r, err := OpenStealReader(root)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		before, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		before = slices.Clone(before)
		st, err := ReadStatTimes(root)
		if err != nil {
			t.Fatal(err)
		}
		after, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		if len(after) == 0 || len(after) != len(before) {
			t.Fatalf("%q: read %v, then %v", root, before, after)
		}
		for c, s := range after {
			p, ok := st.PerCPU[c]
			ticks := int64(math.Round(p.Steal * UserHZ))
			switch {
			case s < 0 && ok, s >= 0 && !ok:
				t.Errorf("%q: cpu%d: %d ticks here, procfs has it: %v", root, c, s, ok)
			case ok && (ticks < before[c] || ticks > s):
				t.Errorf("%q: cpu%d: procfs read %d ticks between %d and %d", root, c, ticks, before[c], s)
			}
		}
		if allocs := testing.AllocsPerRun(10, func() { r.Read() }); allocs != 0 {
			t.Errorf("%q: %v allocations a read, want 0", root, allocs)
		}
	}
	if _, err := OpenStealReader(t.TempDir()); err == nil {
		t.Error("no stat file: want an error")
	}
}

// FuzzParseSteal: no input panics, a CPU has at most one counter, and a
// parse into a reused slice gives what a parse into a new one does.
func FuzzParseSteal(f *testing.F) {
	for _, s := range []string{
		"cpu  1 2 3 4 5 6 7 35 0 0\ncpu0 1 2 3 4 5 6 7 18 0 0\ncpu1 1 2 3 4 5 6 7 17 0 0\nintr 1 2\n",
		"cpu0 1 2 3 4 5 6 7 8\ncpu2 1 2 3 4 5 6 7 9 1 1",
		"cpu1 1 2 3 4 5 6 7 8\ncpu1 1 2 3 4 5 6 7 8\n",
		"cpu0 1 2 3 4 5 6 7\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseSteal(data, nil)
		if err != nil {
			return
		}
		lines := 0
		for _, v := range got {
			if v >= 0 {
				lines++
			}
		}
		if n := bytes.Count(data, []byte("cpu")); lines > n {
			t.Fatalf("%d CPUs from %d \"cpu\" lines", lines, n)
		}
		reused, err := parseSteal(data, []int64{5, 6, 7, 8, 9, 10, 11, 12})
		if err != nil || !slices.Equal(reused, got) {
			t.Fatalf("reused slice: %v (%v), want %v", reused, err, got)
		}
	})
}
