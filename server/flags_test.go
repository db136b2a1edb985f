package server

import (
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
)

// Flags -> Args -> parse gives the flags back; defaults give no argument.
func TestFlagsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Flags)
		args []string // nil: not checked, only the round trip
	}{
		{"defaults", func(*Flags) {}, []string{}},
		{"bench child", func(f *Flags) {
			f.Mode, f.Port, f.Threads, f.CPUs, f.Steal, f.AdminPort = "handoff", 18081, 2, cpu.Set{2, 3}, true, 9090
		}, []string{"--admin-port", "9090", "--cpuset", "2-3", "--mode", "handoff", "--port", "18081", "--threads", "2", "--ws"}},
		{"floating, io_uring", func(f *Flags) {
			f.Float, f.Poller, f.NPlusOne, f.ReusePort, f.Wait, f.StealScope = true, "io_uring", true, true, "spin", "cluster"
		}, nil},
		{"every address, empty words", func(f *Flags) {
			f.Host, f.AdminHost, f.Backend, f.Topology = "", "", "", ""
		}, []string{"--admin-host", "", "--backend", "", "--host", "", "--topology", ""}},
		{"blocking endpoint", func(f *Flags) {
			f.Mode, f.BlockingEndpoint = "nethttp-carrier", true
		}, []string{"--blocking-endpoint", "--mode", "nethttp-carrier"}},
		{"parking off", func(f *Flags) {
			f.Mode, f.ParkIdle = "nethttp-carrier", cliflag.SwitchOff
		}, []string{"--mode", "nethttp-carrier", "--park-idle=false"}},
		{"parking on", func(f *Flags) { f.ParkIdle = cliflag.SwitchOn }, []string{"--park-idle"}},
		{"no hand-off", func(f *Flags) {
			f.HandoffThreshold = -time.Nanosecond
		}, []string{"--handoff-threshold", "-1ns"}},
		{"timeouts", func(f *Flags) {
			f.BackendTimeout, f.Conn.HTTP.WriteTimeout, f.Conn.MaxConns = 250*time.Millisecond, 9*time.Second, 3
		}, nil},
	}
	for _, tc := range tests {
		f := DefaultFlags()
		tc.edit(&f)
		cliflagtest.RoundTrip(t, tc.name, f, (*Flags).Register, tc.args)
	}
}

func FuzzFlagsRoundTrip(f *testing.F) {
	f.Add("carrier", "127.0.0.1", 8081, "http://127.0.0.1:8080/fruits", int64(time.Second), true, false, "0-3")
	f.Add("", "", 0, "", int64(1), false, true, "")
	f.Add("", "", -1, "", int64(0), false, true, "") // refused
	f.Fuzz(func(t *testing.T, mode, host string, port int, backend string, timeout int64, ws, float bool, cpus string) {
		if port < 0 || port > cliflag.MaxPort || timeout <= 0 {
			return // outside the flags' bounds: refused at parse time (cliflag's tests)
		}
		set, err := cpu.ParseList(cpus)
		if err != nil || len(set) == 0 {
			set = nil // not a CPU list (cpu's fuzzer), or the empty default
		}
		fl := DefaultFlags()
		fl.Mode, fl.Host, fl.Port, fl.Backend, fl.BackendTimeout = mode, host, port, backend, time.Duration(timeout)
		fl.Steal, fl.Float, fl.CPUs = ws, float, set
		cliflagtest.RoundTrip(t, "fuzz", fl, (*Flags).Register, nil)
	})
}

// TestHandoffFor: the fruits app's modes whose handlers never block the
// Go way do not hand off unless asked; nethttp-carrier, the tfb app (its
// pool's waits) and the blocking endpoint do.
func TestHandoffFor(t *testing.T) {
	for _, tc := range []struct {
		mode      Mode
		app       App
		threshold time.Duration
		blocking  bool
		want      time.Duration
	}{
		{ModeNetHTTPCarrier, AppFruits, 0, false, 0}, // the carrier package's default, 1 ms
		{ModeCarrier, AppFruits, 0, false, -1},
		{ModeHandoff, AppFruits, 0, false, -1},
		{ModeCarrier, AppFruits, 0, true, 0},
		{ModeCarrier, AppFruits, 5 * time.Millisecond, false, 5 * time.Millisecond},
		{ModeNetHTTPCarrier, AppFruits, -1, false, -1},
		{ModeCarrier, AppTFB, 0, false, 0},
		{ModeCarrier, AppTFB, -1, false, -1},
	} {
		if got := HandoffFor(tc.mode, tc.app, tc.threshold, tc.blocking); got != tc.want {
			t.Errorf("HandoffFor(%s, %s, %v, blocking %v) = %v, want %v", tc.mode, tc.app, tc.threshold, tc.blocking, got, tc.want)
		}
	}
}

func TestParkIdleFor(t *testing.T) {
	for _, tc := range []struct {
		mode Mode
		park cliflag.Switch
		want bool
	}{
		{ModeNetHTTPCarrier, cliflag.SwitchAuto, true}, // the default where handlers are anyone's net/http code
		{ModeCarrier, cliflag.SwitchAuto, false},
		{ModeHandoff, cliflag.SwitchAuto, false},
		{ModeNetHTTPCarrier, cliflag.SwitchOff, false},
		{ModeCarrier, cliflag.SwitchOn, true},
	} {
		if got := ParkIdleFor(tc.mode, tc.park); got != tc.want {
			t.Errorf("ParkIdleFor(%s, %v) = %v, want %v", tc.mode, tc.park, got, tc.want)
		}
	}
	if f := DefaultFlags(); f.ParkIdle != cliflag.SwitchAuto {
		t.Errorf("--park-idle defaults to %v, want auto", f.ParkIdle)
	}
}
