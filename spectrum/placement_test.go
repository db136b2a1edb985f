package spectrum

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cputest"
)

func TestPlace(t *testing.T) {
	tests := []struct {
		fixture string
		allowed string
		fg, bg  int
		p       Placement
		want    string // "fg/bg", or "" when the topology lacks it
	}{
		{"vm2", "0-1", 1, 1, Alone, "[0]/[]"},
		{"vm2", "0-1", 1, 1, SameCore, ""},
		{"vm2", "0-1", 1, 1, SameDie, "[0]/[1]"},
		{"vm2", "0-1", 1, 1, OtherDie, ""},
		{"vm2", "0-1", 3, 0, Alone, ""},
		{"vm2", "1", 1, 1, SameDie, ""},
		{"2s-16c-smt", "0-63", 2, 2, SameCore, "[0 1]/[32 33]"},
		{"2s-16c-smt", "0-63", 2, 1, SameCore, "[0 1]/[32]"},
		{"2s-16c-smt", "0-15", 1, 1, SameCore, ""},
		{"2s-16c-smt", "0-63", 4, 4, SameDie, "[0 1 2 3]/[4 5 6 7]"},
		{"2s-16c-smt", "0-63", 2, 2, OtherDie, "[0 1]/[16 17]"},
		{"2s-16c-smt", "0-20", 2, 8, OtherDie, "[16 17]/[0 1 2 3 4 5 6 7]"},
		{"2s-16c-smt", "0-20", 8, 8, OtherDie, ""},
		{"2s-16c-smt", "0-20", 8, 2, OtherDie, "[0 1 2 3 4 5 6 7]/[16 17]"},
		{"epyc-9654", "0-191", 2, 2, OtherDie, "[0 1]/[8 9]"},
		{"epyc-9654", "0-191", 4, 4, SameDie, "[0 1 2 3]/[4 5 6 7]"},
		{"epyc-9654", "0-191", 8, 1, SameDie, ""},
		{"epyc-9654", "0-191", 8, 8, SameCore, "[0 1 2 3 4 5 6 7]/[96 97 98 99 100 101 102 103]"},
		{"epyc-9654", "4-11", 2, 2, SameDie, "[4 5]/[6 7]"},
		{"epyc-9654", "6-11", 2, 2, SameDie, "[8 9]/[10 11]"},
	}
	topos := cputest.Topologies(t)
	for _, tt := range tests {
		topo := topos[tt.fixture]
		name := fmt.Sprintf("%s %s fg=%d bg=%d %s", tt.fixture, tt.allowed, tt.fg, tt.bg, tt.p)
		pr, err := Place(topo, cputest.MustList(t, tt.allowed), tt.fg, tt.bg, tt.p)
		if tt.want == "" {
			if !errors.Is(err, ErrNotSupported) || !strings.HasPrefix(err.Error(), "skipped: topology: ") {
				t.Errorf("%s: got %v, %v; want a skipped: topology error", name, pr, err)
			} else {
				t.Logf("%s: %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fmt.Sprintf("%v/%v", pr.Foreground, pr.Background); got != tt.want {
			t.Errorf("%s: %s, want %s", name, got, tt.want)
		}
	}
	if _, err := Place(topos["vm2"], cpu.Set{0, 1}, 0, 1, SameDie); err == nil || errors.Is(err, ErrNotSupported) {
		t.Errorf("zero foreground threads: %v, want a plain error", err)
	}
	if _, err := Place(nil, cpu.Set{0, 1}, 1, 1, SameDie); !errors.Is(err, ErrNotSupported) {
		t.Errorf("no topology: %v, want a skipped: topology error", err)
	}
	if _, err := Place(topos["vm2"], cpu.Set{0, 1}, 1, 1, Placement(9)); err == nil || errors.Is(err, ErrNotSupported) {
		t.Errorf("unknown placement: %v, want a plain error", err)
	}
}

func TestPlacementNames(t *testing.T) {
	for p, want := range map[Placement]string{Alone: "baseline", SameCore: "SMT", SameDie: "Die", OtherDie: "Socket", 9: "Placement(9)"} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", p, got, want)
		}
	}
}
