package server

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spindle-lab/spindle/carrier"
	"github.com/spindle-lab/spindle/carrier/wait"
	"github.com/spindle-lab/spindle/cpu"
	"github.com/spindle-lab/spindle/internal/cliflag"
	"github.com/spindle-lab/spindle/tfb"
)

// Flags are the server role's options as "spindle serve" spells them: the
// one definition of its flags (Register) and of its argv (Args), which
// the spindle command parses and checks into Options and the bench runner
// writes for its child. Text fields hold the flags' words unchecked.
type Flags struct {
	// Mode is the scheduling design (ParseMode).
	Mode string
	// Host is the address to listen on; "" means every address.
	Host string
	// Port is the TCP port to listen on.
	Port int
	// Backend is the URL of the mock backend's /fruits.
	Backend string
	// BackendTimeout bounds one backend exchange.
	BackendTimeout time.Duration
	// Threads are carriers (or GOMAXPROCS for nethttp); 0: one per CPU.
	Threads int
	// Wait is the carriers' idle strategy (wait.Names).
	Wait string
	// WaitB is the adaptive strategy's B, kept fixed
	// (carrier/wait.Options.BlockWake with FixedB); 0: measured at start,
	// then learned from the carriers' own wake-ups.
	WaitB time.Duration
	// Slice is the carrier threads' time slice (carrier.Options.Slice);
	// 0: the kernel's default (SliceOption).
	Slice time.Duration
	// BatchOthers puts the process's other threads under SCHED_BATCH
	// while carriers block in their pollers (--batch-others=false is
	// carrier.Options.NoBatch).
	BatchOthers bool
	// Steal turns on work stealing; StealScope is where ("global",
	// "cluster").
	Steal      bool
	StealScope string
	// Float makes carriers floating (not locked to threads).
	Float bool
	// ParkWatch is the park watch, on by default (--park-watch=false is
	// carrier.Options.NoParkWatch).
	ParkWatch bool
	// ParkIdle has idle carriers park in Go's netpoller, GOMAXPROCS no
	// larger than the carriers (carrier.Options.ParkIdle); auto is
	// ParkIdleFor's choice for the mode.
	ParkIdle cliflag.Switch
	// Poller is the carriers' I/O poller (carrier.CheckPoller).
	Poller string
	// BacklogPollGap is carrier.Options.BacklogPollGap (0: its default).
	BacklogPollGap int
	// Topology is the carriers' pinning (carrier.ParsePinning).
	Topology string
	// NPlusOne reserves the first CPU for everything but carriers.
	NPlusOne bool
	// ReusePort gives each carrier its own SO_REUSEPORT listener.
	ReusePort bool
	// CPUs are the carriers' CPUs (nethttp: the process's); empty: all
	// allowed.
	CPUs cpu.Set
	// AdminPort is the port of /metrics, /debug/pprof/ and /debug/carrier
	// on AdminHost; 0: off.
	AdminPort int
	AdminHost string
	// Conn are the connection limit and timeouts.
	Conn cliflag.Conn
	// BlockingEndpoint serves /block (Options.BlockingEndpoint).
	BlockingEndpoint bool
	// App is the application (ParseApp); DB and DBPool are its database
	// and pool size (Options.DB, Options.DBPool).
	App    string
	DB     string
	DBPool int
	// DBConns is where the tfb app's database conns are polled in
	// nethttp-carrier mode: DBConnsCarrier or DBConnsGo
	// (Options.DBGoConns).
	DBConns string
	// HandoffThreshold is carrier.Options.HandoffThreshold: how long a
	// run may hold its carrier before the carrier goes on without it;
	// negative: no hand-off; 0: the mode's (HandoffFor).
	HandoffThreshold time.Duration
}

// The values of --db-conns.
const (
	DBConnsCarrier = "carrier" // a pool per carrier, dialled on it
	DBConnsGo      = "go"      // one pool of ordinary net.Conns
)

// HandoffFor is the carriers' hand-off threshold for mode and app given
// the --handoff-threshold flag (threshold) and --blocking-endpoint: a
// threshold set is kept; 0 is carrier.DefaultHandoffThreshold where
// handlers may block the Go way (nethttp-carrier, whose net/http code is
// anyone's; the tfb app, whose requests wait for a conn of their pool the
// Go way when all are busy, which without a hand-off hangs the carrier for
// good; any mode serving /block) and no hand-off where they never do (the
// fruits app in carrier and handoff modes: its handlers park on carrier
// conns or offload), since a hand-off there can only be a run preempted
// past the threshold, which costs a thread and a few system calls and adds
// noise to the study's figures.
func HandoffFor(mode Mode, app App, threshold time.Duration, blocking bool) time.Duration {
	if threshold != 0 || blocking || mode == ModeNetHTTPCarrier || app == AppTFB {
		return threshold
	}
	return -1
}

// SliceOption is carrier.Options.Slice for the --slice flag's d, whose 0
// means the kernel's default. Floating carriers (float) have no threads of
// their own: the flag's default is then none (another value is refused).
func SliceOption(d time.Duration, float bool) time.Duration {
	switch {
	case d == 0:
		return -1
	case float && d == carrier.DefaultSlice:
		return 0 // Float's default: none
	}
	return d
}

// SliceFlag is the --slice flag's value for carrier.Options.Slice o, the
// inverse of SliceOption: o's default (0) is the flag's, its kernel's
// default (below 0) the flag's 0.
func SliceFlag(o time.Duration) time.Duration {
	switch {
	case o == 0:
		return carrier.DefaultSlice
	case o < 0:
		return 0
	}
	return o
}

// ParkIdleFor says whether mode's idle carriers park (carrier.Options.ParkIdle)
// given the --park-idle switch: as set, or by default where the handlers
// are anyone's net/http code (nethttp-carrier), whose goroutines and
// short waits use the carrier's P while it idles, and whose tail it
// halved at a fixed rate on a one-CPU server, at 3% more CPU per request
// (docs/PERFORMANCE.md, "Fourteenth session"). The study's own carrier
// mode keeps blocking in its poller, the study's design, unless asked.
func ParkIdleFor(mode Mode, park cliflag.Switch) bool {
	return park.Resolve(mode == ModeNetHTTPCarrier)
}

// modeFlags are the flags that apply to some modes only, with those
// modes: the carriers' flags to every mode but nethttp (net/http on Go's
// scheduler, no carrier: only --threads, as GOMAXPROCS, and --cpuset
// apply to it), and --db-conns to the tfb app's carrier modes. Bench's
// flags of the same names follow the table too.
// (A function, not a variable: the modes register from init functions,
// after package variables are set.)
func modeFlags() map[string][]Mode {
	m := map[string][]Mode{"db-conns": {ModeNetHTTPCarrier, ModeCarrier}}
	for _, f := range []string{"ws", "ws-scope", "wait", "wait-b", "slice", "batch-others", "float", "park-watch", "park-idle",
		"poller", "backlog-poll-gap", "topology", "nplus1", "reuseport", "handoff-threshold"} {
		m[f] = CarrierModes()
	}
	return m
}

// CarrierModes are the modes with carriers: every mode but nethttp.
func CarrierModes() []Mode {
	return slices.DeleteFunc(Modes(), func(m Mode) bool { return m == ModeNetHTTP })
}

// CarrierModesHelp lists CarrierModes for a message: "a, b, c".
func CarrierModesHelp() string { return modesText(CarrierModes()) }

func modesText(ms []Mode) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// CheckModeFlags refuses a flag given (given reports whether a flag was
// typed) that does not apply to mode, naming the flag and the modes it
// applies to: a setting with no effect would label the run all the same
// (config.json, the report).
func CheckModeFlags(mode Mode, given func(name string) bool) error {
	flags := modeFlags()
	names := make([]string, 0, len(flags))
	for f := range flags {
		names = append(names, f)
	}
	slices.Sort(names) // the first in order, whatever the map's
	for _, f := range names {
		if ms := flags[f]; given(f) && !slices.Contains(ms, mode) {
			return fmt.Errorf("--%s applies to modes %s, not %s", f, modesText(ms), mode)
		}
	}
	return nil
}

// DefaultFlags are the flags' defaults: those of "spindle serve" alone.
func DefaultFlags() Flags { return cliflag.Defaults((*Flags).Register) }

// Register defines the server's flags on fs, each field set to its
// default.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Mode, "mode", "carrier", "scheduling design: "+ModeHelp()+" (nethttp-carrier: nethttp's handler and client on carriers)")
	fs.StringVar(&f.Host, "host", cliflag.DefaultHost, "address to listen on (\"\": every address)")
	cliflag.Within(&f.Port, 0, cliflag.MaxPort).Var(fs, "port", DefaultPort, "TCP port to listen on")
	fs.StringVar(&f.Backend, "backend", DefaultBackend, "URL of the mock backend's /fruits")
	cliflag.Positive(&f.BackendTimeout).Var(fs, "backend-timeout", DefaultBackendTimeout, "bound on one backend exchange (then 504)")
	cliflag.AtLeast(&f.Threads, 0).Var(fs, "threads", 0, "carriers (handoff, carrier, nethttp-carrier) or GOMAXPROCS (nethttp); 0: one per CPU of --cpuset / Go's default")
	fs.StringVar(&f.Wait, "wait", carrier.DefaultWait, "carriers' idle strategy: "+wait.Help())
	cliflag.AtLeast(&f.WaitB, 0).Var(fs, "wait-b", 0, "with --wait adaptive: B, the cost of one block-and-wake the strategy weighs spinning against, kept fixed; larger spins longer before blocking, which pays where a wake-up costs more than the carrier sees (a virtual machine whose idle vCPUs halt: its peers' IPIs; docs/wait.md). 0: measured at start, then learned from the carriers' wake-ups")
	fs.BoolVar(&f.BatchOthers, "batch-others", true, "where carriers block in their pollers on threads of their own (not --float, --park-idle or --nplus1): the process's other threads (the GC's workers, goroutines) run under SCHED_BATCH, so that one that wakes does not preempt a carrier on its CPU (the GC's stop-the-world on a one-CPU server: 0.46 ms median without, 0.05 with; docs/carrier.md, \"Batching the other threads\"); false: leave them under the kernel's default policy")
	cliflag.AtLeast(&f.Slice, 0).Var(fs, "slice", carrier.DefaultSlice, "the time slice each carrier's thread asks the kernel for, 100us-100ms: from Linux 6.12 a carrier woken by I/O with a shorter slice than the thread on its CPU (the GC's workers, goroutines) preempts it at once rather than waiting out its slice (docs/carrier.md, \"Time slice\"); 0: the kernel's default; with --float none")
	fs.BoolVar(&f.Steal, "ws", false, "work stealing of unstarted work between carriers")
	fs.BoolVar(&f.Float, "float", false, "floating carriers: not locked to threads, so with --ws an idle carrier also takes a busy one's started tasks and their conns (excludes --topology, --nplus1, --cpuset: use taskset)")
	fs.BoolVar(&f.ParkWatch, "park-watch", true, "where runs are handed off (nethttp-carrier, or --handoff-threshold) and carriers are not --float: a handler's run that waits the Go way for less than the hand-off threshold (a database driver's round trip on its own connections, a pool's semaphore) gives its carrier up as the wait begins (docs/carrier.md, \"Hand-off\"); watches only the tasks whose last run waited, a goroutine wake-up per watched run")
	f.ParkIdle = cliflag.SwitchAuto
	fs.Var(&f.ParkIdle, "park-idle", "idle carriers park in Go's netpoller, giving their P to goroutines and the GC while they wait, and GOMAXPROCS is not raised above the carriers (docs/carrier.md, \"Parking when idle\"): a lower tail where carriers idle often; goroutines wait while every carrier is busy. true, false, or auto: on in nethttp-carrier mode, off in the others")
	fs.StringVar(&f.Poller, "poller", carrier.DefaultPoller, "carriers' I/O poller: epoll, io_uring (reads and writes as RECV/SEND) or io_uring_poll (readiness only); an error where the kernel refuses io_uring (spindle probe says why)")
	cliflag.AtLeast(&f.BacklogPollGap, 1).Var(fs, "backlog-poll-gap", carrier.DefaultBacklogPollGap, "with a backlog, drain budgets (50µs each) a carrier runs tasks between two polls of I/O; 1: before every drain pass, as the scheduler study's loop")
	fs.StringVar(&f.StealScope, "ws-scope", "global", "where an idle carrier steals: global or cluster (L3)")
	fs.StringVar(&f.Topology, "topology", "off", "pinning of carriers: off, cpu (carrier i on the i-th CPU) or nosmt (one CPU per core)")
	fs.BoolVar(&f.NPlusOne, "nplus1", false, "reserve the first CPU of the set for everything that is not a carrier")
	fs.BoolVar(&f.ReusePort, "reuseport", false, "one SO_REUSEPORT listener per carrier instead of one balancing acceptor")
	cliflag.CPUsVar(fs, &f.CPUs, "cpuset", "CPUs for the carriers (nethttp: the whole process), e.g. \"1\" or \"2-3\" (default: all allowed)")
	cliflag.Within(&f.AdminPort, 0, cliflag.MaxPort).Var(fs, "admin-port", 0, "port of /metrics, /debug/pprof/ and /debug/carrier on --admin-host; 0: off")
	fs.StringVar(&f.AdminHost, "admin-host", cliflag.DefaultHost, "address the admin port listens on (\"\": every address)")
	f.Conn.Register(fs)
	cliflag.Any(&f.HandoffThreshold).Var(fs, "handoff-threshold", 0, "how long a handler's run may hold its carrier (blocked the Go way or computing) before the carrier hands itself to another thread and goes on without it (docs/carrier.md, \"Hand-off\"); negative, e.g. -1ns: no hand-off (such a handler then stalls its carrier); 0: 1ms in nethttp-carrier mode and with --blocking-endpoint, none in carrier and handoff modes, whose handlers never block the Go way (but the tfb app's, which wait for a conn of their pool)")
	fs.StringVar(&f.App, "app", string(AppFruits), "application: fruits (/fruits through the mock backend, the scheduler study's) or tfb (TechEmpower's /json, /plaintext, /db, /queries, /fortunes, /updates on the PostgreSQL at --db; modes nethttp, nethttp-carrier and carrier)")
	fs.StringVar(&f.DB, "db", "", "with --app tfb: the PostgreSQL database, a `URL` such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable, with the tables World and Fortune (the server makes those missing)")
	cliflag.Within(&f.DBPool, 1, maxPoolSize).Var(fs, "db-pool", tfb.DefaultPoolSize, "with --app tfb: the most connections to --db in one pool: the server's in nethttp mode, each carrier's in nethttp-carrier and carrier modes (a pool per carrier)")
	fs.StringVar(&f.DBConns, "db-conns", DBConnsCarrier, "with --app tfb in nethttp-carrier and carrier modes: carrier (a pool per carrier, its connections polled by that carrier: handlers park on them) or go (one pool of ordinary connections, as nethttp's: handlers wait for the database the Go way and are handed off)")
	fs.BoolVar(&f.BlockingEndpoint, "blocking-endpoint", false, "also serve GET /block?kind=sleep|mutex|singleflight&d=DURATION: a handler that blocks the Go way, to measure how the mode isolates the other requests from it (docs/server.md)")
}

// Args is the inverse of Register: the arguments of "spindle serve" that
// give f (the flags that differ from their defaults).
func (f Flags) Args() []string { return cliflag.Args(f, (*Flags).Register) }
