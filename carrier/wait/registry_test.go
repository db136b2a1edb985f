package wait

import (
	"errors"
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	if len(bad) > 0 {
		t.Fatalf("Register refused specs %q (empty name, duplicate or no constructor)", bad)
	}
	names := Names()
	if len(names) == 0 {
		t.Fatal("no strategy registered")
	}
	av := Available()
	for i, s := range Specs() {
		if names[i] != s.Name {
			t.Errorf("Names()[%d] = %q, Specs()[%d].Name = %q", i, names[i], i, s.Name)
		}
		if i > 0 && Specs()[i-1].Order > s.Order {
			t.Errorf("%s (order %d) listed after order %d", s.Name, s.Order, Specs()[i-1].Order)
		}
		err, ok := av[s.Name]
		if !ok {
			t.Errorf("Available lacks %s", s.Name)
			continue
		}
		st, nerr := New(s.Name, Options{BlockWake: 1000})
		switch {
		case err == nil && nerr != nil:
			t.Errorf("%s: available but New: %v", s.Name, nerr)
		case err != nil && !errors.Is(nerr, ErrNotSupported):
			t.Errorf("%s: unavailable (%v) but New returned %v", s.Name, err, nerr)
		case nerr == nil && st.Name() != s.Name:
			t.Errorf("New(%q).Name() = %q", s.Name, st.Name())
		}
	}
	if _, err := New("no-such", Options{}); err == nil {
		t.Error("New of an unknown name: no error")
	}
}

func TestRegistryTraits(t *testing.T) {
	tests := []struct {
		name string
		keep func(Spec) bool
		want []string
	}{
		{"adaptive", func(s Spec) bool { return s.Adaptive }, []string{"adaptive"}},
		{"fixed", func(s Spec) bool { return !s.Adaptive }, []string{"block", "busy", "pause", "tpause", "umwait"}},
		{"shares core", func(s Spec) bool { return s.SharesCore }, []string{"block", "adaptive"}},
	}
	for _, tt := range tests {
		if got := NamesWhere(tt.keep); !slices.Equal(got, tt.want) {
			t.Errorf("%s: NamesWhere = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got, want := Help(), "block, busy, pause, adaptive, tpause or umwait"; got != want {
		t.Errorf("Help() = %q, want %q", got, want)
	}
}
