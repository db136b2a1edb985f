package carrier

import (
	"errors"
	"fmt"
	"testing"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cputest"
)

func TestPlanCarriers(t *testing.T) {
	topos := cputest.Topologies(t)
	tests := []struct {
		fixture  string // "" : nil topology
		allowed  string
		req      carrierRequest
		carriers string // fmt of the slice; "" when an error is expected
		reserved string
	}{
		{"vm2", "0-1", carrierRequest{Pin: PinCPU}, "[0 1]", ""},
		{"vm2", "0-1", carrierRequest{Pin: PinCPU, Reserve: true}, "[1]", "0"},
		{"vm2", "0-1", carrierRequest{Carriers: 2, Pin: PinCPU, Reserve: true}, "", ""},
		{"vm2", "1", carrierRequest{Pin: PinSkipSMT, Reserve: true}, "", ""},
		{"vm2", "0-1", carrierRequest{Carriers: 3, Pin: PinCPU}, "", ""},
		{"vm2", "0-1", carrierRequest{Carriers: 2, Pin: PinOff}, "[-1 -1]", ""},
		{"2s-16c-smt", "0-63", carrierRequest{Carriers: 4, Pin: PinCPU, Reserve: true}, "[1 2 3 4]", "0,5-63"},
		{"2s-16c-smt", "0-63", carrierRequest{Carriers: 4, Pin: PinSkipSMT, Reserve: true}, "[1 2 3 4]", "0,5-32,37-63"},
		{"2s-16c-smt", "0,32,40-41,8", carrierRequest{Pin: PinSkipSMT}, "[0 8 41]", ""},
		{"2s-16c-smt", "0,32", carrierRequest{Pin: PinSkipSMT, Reserve: true}, "", ""},
		{"2s-16c-smt", "0,32", carrierRequest{Pin: PinCPU, Reserve: true}, "[32]", "0"},
		{"epyc-9654", "0-191", carrierRequest{Carriers: 95, Pin: PinSkipSMT, Reserve: true}, "", "ok"},
		{"epyc-9654", "0-191", carrierRequest{Carriers: 96, Pin: PinSkipSMT, Reserve: true}, "", ""},
		{"epyc-9654", "8-15,104-111", carrierRequest{Pin: PinSkipSMT, Reserve: true}, "[9 10 11 12 13 14 15]", "8,104"},
		{"", "2-4", carrierRequest{Pin: PinSkipSMT, Reserve: true}, "[3 4]", "2"},
	}
	for _, tt := range tests {
		topo := topos[tt.fixture] // nil for ""
		name := fmt.Sprintf("%s %s %+v", tt.fixture, tt.allowed, tt.req)
		p, err := planCarriers(cputest.MustList(t, tt.allowed), topo, tt.req)
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
	if _, err := planCarriers(cpu.Set{0}, nil, carrierRequest{Carriers: -1}); err == nil {
		t.Error("negative carriers accepted")
	}
}

// CheckPlacement answers as New's placement does, without starting
// anything: pinned carriers (and N+1's reserved CPU) need CPUs of their
// own, unpinned ones do not.
func TestCheckPlacement(t *testing.T) {
	for _, tc := range []struct {
		o  Options
		ok bool
	}{
		{Options{CPUs: cpu.Set{0}, Carriers: 4}, true},
		{Options{CPUs: cpu.Set{0, 1}, Carriers: 2, Pin: PinCPU}, true},
		{Options{CPUs: cpu.Set{0}, Carriers: 2, Pin: PinCPU}, false},
		{Options{CPUs: cpu.Set{0}, NPlusOne: true}, false},
		{Options{CPUs: cpu.Set{0, 1}, Carriers: 2, Pin: PinCPU, NPlusOne: true}, false},
	} {
		err := CheckPlacement(tc.o)
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrTooFewCPUs) {
			t.Errorf("CheckPlacement(CPUs %s, %d carriers, pin %s, n+1 %v) = %v, want ok %v", tc.o.CPUs, tc.o.Carriers, tc.o.Pin, tc.o.NPlusOne, err, tc.ok)
		}
	}
}
