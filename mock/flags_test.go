package mock

import (
	"math"
	"testing"
	"time"

	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/internal/cliflag/cliflagtest"
)

// Flags -> Args -> parse gives the flags back; defaults give no argument.
func TestFlagsRoundTrip(t *testing.T) {
	d := DefaultFlags()
	tests := []struct {
		name string
		edit func(*Flags)
		args []string // nil: not checked, only the round trip
	}{
		{"defaults", func(*Flags) {}, []string{}},
		{"bench child", func(f *Flags) {
			f.Port, f.ThinkTime, f.Threads, f.CPUs = 18080, 30*time.Millisecond, 2, cpu.Set{0, 2, 3}
		}, []string{"--cpuset", "0,2-3", "--port", "18080", "--think-time", "30ms", "--threads", "2"}},
		{"every address, faults", func(f *Flags) {
			f.Host, f.FailRate, f.CloseRate, f.Seed, f.ThinkJitter = "", 0.01, 1e-3, 7, 1500*time.Microsecond
		}, nil},
		{"connection limits", func(f *Flags) {
			f.Conn.MaxConns, f.Conn.HTTP.IdleTimeout, f.Conn.HTTP.ReadTimeout = 10000, 7*time.Minute, 3*time.Second
		}, []string{"--idle-timeout", "7m0s", "--max-conns", "10000", "--read-timeout", "3s"}},
	}
	for _, tc := range tests {
		f := d
		tc.edit(&f)
		cliflagtest.RoundTrip(t, tc.name, f, (*Flags).Register, tc.args)
	}
}

func FuzzFlagsRoundTrip(f *testing.F) {
	f.Add("127.0.0.1", 8080, int64(time.Millisecond), 1, "0-3", 0.5, uint64(1), 0)
	f.Add("", 0, int64(0), 1, "", 1e-300, uint64(1<<63), 1<<40)
	f.Add("", -1, int64(-5), 0, "", 1.5, uint64(0), -1) // refused
	f.Fuzz(func(t *testing.T, host string, port int, think int64, threads int, cpus string, rate float64, seed uint64, maxConns int) {
		if math.IsNaN(rate) {
			return // NaN equals nothing, not even itself: DeepEqual cannot compare it
		}
		if port < 0 || port > cliflag.MaxPort || think < 0 || threads < 1 || rate < 0 || rate > 1 || maxConns < 0 {
			return // outside the flags' bounds: refused at parse time (cliflag's tests)
		}
		set, err := cpu.ParseList(cpus)
		if err != nil {
			return // not a CPU list: the flag refuses it (cpu's fuzzer)
		}
		fl := DefaultFlags()
		fl.Host, fl.Port, fl.ThinkTime, fl.Threads, fl.CPUs = host, port, time.Duration(think), threads, set
		fl.FailRate, fl.Seed, fl.Conn.MaxConns = rate, seed, maxConns
		if len(set) == 0 {
			fl.CPUs = nil // the empty list is the default, no set
		}
		cliflagtest.RoundTrip(t, "fuzz", fl, (*Flags).Register, nil)
	})
}
