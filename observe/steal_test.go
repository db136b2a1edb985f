package observe

import (
	"os"
	"path/filepath"
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
