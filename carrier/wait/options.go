package wait

import "time"

// Defaults for Options. They are also the spindle command's flag defaults.
const (
	// DefaultPollEvery is how many PAUSE instructions the spinning
	// strategies execute between two Target.Poll calls. One PAUSE takes
	// from about 10 cycles (before Skylake) to about 140 (Skylake and
	// later, Sapphire Rapids); 64 of them keep epoll_wait(0) calls, which
	// cost a few hundred nanoseconds each, to a small share of a spin while
	// still seeing I/O within a few microseconds.
	DefaultPollEvery = 64
	// DefaultTrust is the adaptive policy's trust λ in its learned
	// threshold: the threshold is kept in [λB, B/λ], so one idle period never
	// costs more than 1+1/λ times the offline optimum, and a workload where
	// blocking at once is best costs at most 1+λ times that (see Policy).
	DefaultTrust = 0.1
	// DefaultHalfLife is the number of idle periods after which an
	// observation's weight in the adaptive policy's histogram has halved.
	DefaultHalfLife = 64
	// DefaultParkCycles is how many TSC cycles one TPAUSE or UMWAIT may
	// last before the strategy re-checks its target and polls: about 3µs at
	// 3 GHz, comparable to the PAUSE strategy's poll interval.
	DefaultParkCycles = 10000
)

// Options tune the strategies; the zero value selects every default.
type Options struct {
	// PollEvery is, for pause and adaptive's spinning phase, how many
	// PAUSE instructions pass between two Target.Poll calls, each an
	// epoll_wait with a zero timeout. Target.Ready is checked after every
	// instruction. (tpause and umwait poll after every park, whose length
	// ParkCycles bounds.) 0 means DefaultPollEvery.
	PollEvery int
	// BlockWake is B, the measured cost of one block-and-wake (nanoseconds
	// of wall time from a producer's wake-up to the blocked thread running
	// again, plus the system calls on both sides). The adaptive policy
	// weighs spinning against it. 0 means: measure it once per process
	// with MeasureBlockWakeAfter(DefaultMeasureRounds, DefaultMeasureIdle).
	BlockWake time.Duration
	// FixedB keeps BlockWake as the adaptive policy's B for good: it does
	// not learn B from the wake-ups it times (WakeStamper). An experiment
	// that scores strategies with one measured B (the waiting spectrum)
	// sets it, so that the policy minimises the cost it is scored by.
	FixedB bool
	// Trust is the adaptive policy's λ in (0, 1]: how far the learned
	// threshold may stray from B (it stays within [λB, B/λ]). Smaller
	// trusts the learned distribution more. 0 means DefaultTrust.
	Trust float64
	// HalfLife is the adaptive policy's memory, in idle periods: an
	// observation's weight halves after this many newer ones. 0 means
	// DefaultHalfLife.
	HalfLife int
	// ParkCycles is, for tpause and umwait, the longest one park may last,
	// in TSC cycles; it is further capped by the kernel's
	// IA32_UMWAIT_CONTROL limit (/sys/devices/system/cpu/umwait_control/
	// max_time). 0 means DefaultParkCycles.
	ParkCycles uint64
	// Shallow selects the C0.1 state for tpause and umwait (faster wake,
	// less power saved); by default they ask for C0.2.
	Shallow bool
}

func (o Options) withDefaults() Options {
	if o.PollEvery <= 0 {
		o.PollEvery = DefaultPollEvery
	}
	if o.Trust <= 0 || o.Trust > 1 {
		o.Trust = DefaultTrust
	}
	if o.HalfLife <= 0 {
		o.HalfLife = DefaultHalfLife
	}
	if o.ParkCycles == 0 {
		o.ParkCycles = DefaultParkCycles
	}
	return o
}
