package cpu

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

func mustList(t *testing.T, s string) Set {
	t.Helper()
	set, err := ParseList(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestPlanCarriers(t *testing.T) {
	tests := []struct {
		fixture  string // "" : nil topology
		allowed  string
		req      CarrierRequest
		carriers string // fmt of the slice; "" when an error is expected
		reserved string
	}{
		{"vm2", "0-1", CarrierRequest{Mode: PinCPU}, "[0 1]", ""},
		{"vm2", "0-1", CarrierRequest{Mode: PinCPU, Reserve: true}, "[1]", "0"},
		{"vm2", "0-1", CarrierRequest{Carriers: 2, Mode: PinCPU, Reserve: true}, "", ""},
		{"vm2", "1", CarrierRequest{Mode: PinCore, Reserve: true}, "", ""},
		{"vm2", "0-1", CarrierRequest{Carriers: 3, Mode: PinCPU}, "", ""},
		{"vm2", "0-1", CarrierRequest{Carriers: 2, Mode: PinOff}, "[-1 -1]", ""},
		{"2s-16c-smt", "0-63", CarrierRequest{Carriers: 4, Mode: PinCPU, Reserve: true}, "[1 2 3 4]", "0,5-63"},
		{"2s-16c-smt", "0-63", CarrierRequest{Carriers: 4, Mode: PinCore, Reserve: true}, "[1 2 3 4]", "0,5-32,37-63"},
		{"2s-16c-smt", "0,32,40-41,8", CarrierRequest{Mode: PinCore}, "[0 8 41]", ""},
		{"2s-16c-smt", "0,32", CarrierRequest{Mode: PinCore, Reserve: true}, "", ""},
		{"2s-16c-smt", "0,32", CarrierRequest{Mode: PinCPU, Reserve: true}, "[32]", "0"},
		{"epyc-9654", "0-191", CarrierRequest{Carriers: 95, Mode: PinCore, Reserve: true}, "", "ok"},
		{"epyc-9654", "0-191", CarrierRequest{Carriers: 96, Mode: PinCore, Reserve: true}, "", ""},
		{"epyc-9654", "8-15,104-111", CarrierRequest{Mode: PinCore, Reserve: true}, "[9 10 11 12 13 14 15]", "8,104"},
		{"", "2-4", CarrierRequest{Mode: PinCore, Reserve: true}, "[3 4]", "2"},
	}
	for _, tt := range tests {
		var topo *Topology
		if tt.fixture != "" {
			topo = fixture(t, tt.fixture)
		}
		name := fmt.Sprintf("%s %s %+v", tt.fixture, tt.allowed, tt.req)
		p, err := PlanCarriers(mustList(t, tt.allowed), topo, tt.req)
		switch {
		case tt.reserved == "ok": // a large plan: check its shape only
			if err != nil || len(p.Carriers) != tt.req.Carriers || len(p.Reserved) != 2 {
				t.Errorf("%s: %d carriers, reserved %s, %v", name, len(p.Carriers), p.Reserved, err)
			}
		case tt.carriers == "":
			if !errors.Is(err, ErrTooFewCPUs) {
				t.Errorf("%s: got %v, %v; want ErrTooFewCPUs", name, p, err)
			} else {
				t.Logf("%s: %v", name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", name, err)
		default:
			if got := fmt.Sprint(p.Carriers); got != tt.carriers {
				t.Errorf("%s: carriers %s, want %s", name, got, tt.carriers)
			}
			if got := p.Reserved.String(); got != tt.reserved {
				t.Errorf("%s: reserved %q, want %q", name, got, tt.reserved)
			}
		}
	}
	if _, err := PlanCarriers(Set{0}, nil, CarrierRequest{Carriers: -1}); err == nil {
		t.Error("negative carriers accepted")
	}
}

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
	for _, tt := range tests {
		topo := fixture(t, tt.fixture)
		name := fmt.Sprintf("%s %s fg=%d bg=%d %s", tt.fixture, tt.allowed, tt.fg, tt.bg, tt.p)
		pr, err := topo.Place(mustList(t, tt.allowed), tt.fg, tt.bg, tt.p)
		if tt.want == "" {
			if !errors.Is(err, ErrNotSupported) {
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
	if _, err := fixture(t, "vm2").Place(Set{0, 1}, 0, 1, SameDie); err == nil {
		t.Error("zero foreground threads accepted")
	}
}

func TestCoresOf(t *testing.T) {
	smt := fixture(t, "2s-16c-smt")
	// The first core of the 2-socket fixture has two SMT siblings; with
	// CPU 1 and CPU 400 (which the topology does not know) allowed too,
	// the siblings make one core and the others one each.
	sib := smt.Cores()[0]
	if len(sib) != 2 {
		t.Fatalf("fixture core 0 = %v, want two SMT siblings", sib)
	}
	for _, tc := range []struct {
		name    string
		allowed Set
		topo    *Topology
		want    []Set
	}{
		{"siblings together, unknown CPU alone", Set{sib[0], 1, sib[1], 400}, smt, []Set{{sib[0], sib[1]}, {1}, {400}}},
		{"no topology: one core per CPU", Set{3, 1}, nil, []Set{{1}, {3}}},
		{"nothing allowed", nil, smt, nil},
		{"the development VM", Set{0, 1}, fixture(t, "vm2"), []Set{{0}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := CoresOf(tc.allowed, tc.topo)
			if !slices.EqualFunc(got, tc.want, func(a, b Set) bool { return slices.Equal(a, b) }) {
				t.Errorf("CoresOf(%v) = %v, want %v", tc.allowed, got, tc.want)
			}
		})
	}
}
