package observe

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sysTree writes files (path relative to the root: content) as a fake sysfs
// and returns its root.
func sysTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestReadIdle(t *testing.T) {
	const (
		cpuidle = "devices/system/cpu/cpuidle/"
		states  = "devices/system/cpu/cpu0/cpuidle/"
		haltns  = "module/haltpoll/parameters/guest_halt_poll_ns"
	)
	guest := map[string]string{
		cpuidle + "current_driver": "haltpoll\n", cpuidle + "current_governor_ro": "haltpoll\n",
		states + "state0/name": "POLL\n", states + "state1/name": "haltpoll\n",
	}
	with := func(m map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	tests := []struct {
		name   string
		files  map[string]string
		want   Idle
		text   string // String's prefix
		wantNA string
	}{
		{"a KVM guest, halt-polling off", with(guest, haltns, "0\n"),
			Idle{Driver: "haltpoll", Governor: "haltpoll", States: []string{"POLL", "haltpoll"}, HaltPollNs: 0},
			"driver haltpoll, governor haltpoll, states POLL | haltpoll; guest halt-polling off (guest_halt_poll_ns 0): a wake-up of an idle vCPU is an IPI", ""},
		{"a KVM guest, halt-polling on", with(guest, haltns, "200000\n"),
			Idle{Driver: "haltpoll", Governor: "haltpoll", States: []string{"POLL", "haltpoll"}, HaltPollNs: 200000},
			"driver haltpoll, governor haltpoll, states POLL | haltpoll; guest halt-polling up to 200µs", ""},
		{"bare metal", map[string]string{cpuidle + "current_driver": "intel_idle\n", cpuidle + "current_governor": "menu\n",
			states + "state0/name": "POLL\n", states + "state1/name": "C1\n", states + "state2/name": "C6\n"},
			Idle{Driver: "intel_idle", Governor: "menu", States: []string{"POLL", "C1", "C6"}, HaltPollNs: -1},
			"driver intel_idle, governor menu, states POLL | C1 | C6", ""},
		{"no governor, no states", map[string]string{cpuidle + "current_driver": "none\n"},
			Idle{Driver: "none", HaltPollNs: -1}, "driver none, governor none", ""},
		{"no cpuidle", map[string]string{"devices/system/cpu/online": "0-1\n"},
			Idle{HaltPollNs: -1}, "n/a (no ", "the kernel has no cpuidle"},
		{"a bad halt-poll figure", with(guest, haltns, "lots\n"),
			Idle{Driver: "haltpoll", Governor: "haltpoll", States: []string{"POLL", "haltpoll"}, HaltPollNs: -1},
			"driver haltpoll, governor haltpoll, states POLL | haltpoll; n/a (guest_halt_poll_ns \"lots\"", "not a count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadIdle(sysTree(t, tt.files))
			if got.Driver != tt.want.Driver || got.Governor != tt.want.Governor || !slices.Equal(got.States, tt.want.States) ||
				got.HaltPollNs != tt.want.HaltPollNs || (tt.wantNA == "") != (got.NA == "") || !strings.Contains(got.NA, tt.wantNA) {
				t.Errorf("ReadIdle = %+v, want %+v (n/a with %q)", got, tt.want, tt.wantNA)
			}
			if s := got.String(); !strings.HasPrefix(s, tt.text) {
				t.Errorf("String = %q, want it to begin %q", s, tt.text)
			}
			if halts := tt.want.HaltPollNs == 0; got.HaltsAtOnce() != halts {
				t.Errorf("HaltsAtOnce = %v, want %v", got.HaltsAtOnce(), halts)
			}
		})
	}
}
