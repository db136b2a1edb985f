package wait

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
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
	// The built-in strategies' traits; a strategy added in its own file
	// needs no edit here.
	tests := []struct {
		name             string
		adaptive, shares bool
	}{
		{"block", false, true},
		{"busy", false, false},
		{"pause", false, false},
		{"adaptive", true, true},
		{"tpause", false, false},
		{"umwait", false, false},
	}
	for _, tt := range tests {
		s, ok := Lookup(tt.name)
		if !ok {
			t.Errorf("%s not registered", tt.name)
			continue
		}
		if s.Adaptive != tt.adaptive || s.SharesCore != tt.shares {
			t.Errorf("%s: Adaptive %v SharesCore %v, want %v %v", tt.name, s.Adaptive, s.SharesCore, tt.adaptive, tt.shares)
		}
		if !slices.Contains(NamesWhere(func(x Spec) bool { return x.Adaptive == tt.adaptive }), tt.name) {
			t.Errorf("NamesWhere(Adaptive == %v) lacks %s", tt.adaptive, tt.name)
		}
	}
	n := Names()
	if got, want := Help(), strings.Join(n[:len(n)-1], ", ")+" or "+n[len(n)-1]; got != want {
		t.Errorf("Help() = %q, want %q", got, want)
	}
	if !strings.HasPrefix(Help(), "block, busy, pause") {
		t.Errorf("Help() = %q: the built-ins' order changed", Help())
	}
}

func TestCheckB(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       time.Duration
		wantErr string
	}{
		{"adaptive", 200 * time.Microsecond, ""},
		{"adaptive", 0, ""},
		{"block", 0, ""},
		{"busy", 0, ""},
		{"block", time.Millisecond, "needs an adaptive strategy, not block"},
		{"busy", time.Nanosecond, "needs an adaptive strategy, not busy"},
		{"adaptive", -time.Microsecond, "want 0"},
		{"no-such", time.Millisecond, "needs an adaptive strategy"},
	} {
		err := CheckB(tc.name, tc.b)
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("CheckB(%s, %v) = %v, want an error with %q", tc.name, tc.b, err, tc.wantErr)
		}
	}
}
