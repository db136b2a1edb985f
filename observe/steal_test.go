package observe

import (
	"strings"
	"testing"
)

func TestParseStatTimes(t *testing.T) {
	const a = "cpu  100 0 50 800 10 0 5 35 7 0\ncpu0 50 0 25 400 5 0 2 18 7 0\ncpu1 50 0 25 400 5 0 3 17 0 0\nintr 1 2\n"
	const b = "cpu  200 0 100 1600 20 0 10 70 9 0\ncpu0 100 0 50 800 10 0 5 35 9 0\ncpu1 100 0 50 800 10 0 5 35 0 0\n"
	sa, err := parseStatTimes([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	if sa.All.Total != 1000 || sa.All.Steal != 35 || len(sa.PerCPU) != 2 || sa.PerCPU[1].Steal != 17 {
		t.Fatalf("parsed %+v", sa)
	}
	sb, err := parseStatTimes([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := StealPercent(sa, sb, nil); p != 3.5 || err != nil || StealText(p, err) != "3.5%" {
		t.Errorf("all: %v %v %q", p, err, StealText(p, err))
	}
	if p, err := StealPercent(sa, sb, []int{1}); p != 3.6 || err != nil {
		t.Errorf("cpu1: %v %v", p, err)
	}
	if s := StealText(StealPercent(sa, sb, []int{5})); !strings.HasPrefix(s, "n/a (no cpu5") {
		t.Errorf("missing CPU: %q", s)
	}
	if s := StealText(StealPercent(sa, sa, nil)); !strings.HasPrefix(s, "n/a (no clock ticks") {
		t.Errorf("same reading: %q", s)
	}
	old, err := parseStatTimes([]byte("cpu 1 2 3 4 5 6 7\n")) // Linux 2.6.10-: no steal
	if err != nil {
		t.Fatal(err)
	}
	if s := StealText(StealPercent(old, old, nil)); !strings.HasPrefix(s, "n/a (") || !strings.Contains(s, "no steal field") {
		t.Errorf("old kernel: %q", s)
	}
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2\n", "cpu 1 2 x 4\n", "cpu 1 2 3 4\ncpux 1 2 3 4\n"} {
		if _, err := parseStatTimes([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
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

func FuzzParseStatTimes(f *testing.F) {
	f.Add([]byte("cpu  100 0 50 800 10 0 5 35 7 0\ncpu0 50 0 25 400 5 0 2 18 7 0\n"))
	f.Add([]byte("cpu 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseStatTimes(b)
		if err != nil {
			return
		}
		if st.All.Steal > st.All.Total {
			t.Fatalf("steal %d above total %d", st.All.Steal, st.All.Total)
		}
	})
}
