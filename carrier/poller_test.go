package carrier

import (
	"slices"
	"testing"

	"github.com/spindle-lab/spindle/internal/unix"
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

// A poller that cannot be made (no file descriptor left: EMFILE) is no
// poller at all, not a typed nil pointer in the interface, which a
// carrier's closeFDs then closed: serve --threads 600 under ulimit -n 1024
// panicked with a nil dereference.
func TestPollerOutOfFDs(t *testing.T) {
	efd, err := unix.Eventfd()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	old, err := unix.GetNofile()
	if err != nil {
		t.Skipf("cannot read RLIMIT_NOFILE: %v", err)
	}
	for _, k := range pollerKinds {
		if k.check != nil && k.check() != nil {
			continue // the kernel refuses io_uring here: nothing to make
		}
		if err := unix.SetNofile(unix.Rlimit{Cur: uint64(lowestFreeFD(t) + 8), Max: old.Max}); err != nil {
			t.Skipf("cannot lower RLIMIT_NOFILE: %v", err)
		}
		var fill []int // every descriptor left under the limit
		for {
			fd, err := unix.DupCloexec(efd)
			if err != nil {
				break
			}
			fill = append(fill, fd)
		}
		p, err := k.make(efd, false, &stats{})
		for _, fd := range fill {
			unix.Close(fd)
		}
		unix.SetNofile(old)
		if err == nil {
			p.close()
			t.Skipf("%s: made a poller without a free file descriptor", k.name)
		}
		if p != nil {
			t.Errorf("%s without a file descriptor: %#v, %v; want no poller", k.name, p, err)
		}
	}
}
