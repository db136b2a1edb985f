package carrier

import (
	"slices"
	"testing"
)

// The poller table (pollerKinds) is what Pollers, CheckPoller, knownPoller
// and newPoller read: the names in their order, "" as the default, and
// an unknown name refused by each.
func TestPollerKinds(t *testing.T) {
	if want := []string{PollerEpoll, PollerURing, PollerURingPoll}; !slices.Equal(Pollers, want) {
		t.Errorf("Pollers = %v, want %v", Pollers, want)
	}
	for _, tc := range []struct {
		name  string
		known bool
		kind  string // the kind it names
	}{
		{"", true, DefaultPoller},
		{PollerEpoll, true, PollerEpoll},
		{PollerURing, true, PollerURing},
		{PollerURingPoll, true, PollerURingPoll},
		{"kqueue", false, ""},
		{"EPOLL", false, ""},
	} {
		k, ok := pollerKindOf(tc.name)
		if ok != tc.known || k.name != tc.kind || knownPoller(tc.name) != tc.known {
			t.Errorf("%q: kind %q known %v (knownPoller %v), want %q %v", tc.name, k.name, ok, knownPoller(tc.name), tc.kind, tc.known)
		}
		if !tc.known {
			if err := CheckPoller(tc.name); err == nil {
				t.Errorf("CheckPoller(%q) accepted it", tc.name)
			}
			if p, err := newPoller(tc.name, -1, false, &stats{}); err == nil || p != nil {
				t.Errorf("newPoller(%q) = %v, %v; want an error", tc.name, p, err)
			}
		}
	}
	if err := CheckPoller(""); err != nil {
		t.Errorf("CheckPoller(\"\") = %v, want nil (epoll runs everywhere)", err)
	}
}
