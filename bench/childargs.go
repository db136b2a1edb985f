package bench

import (
	"time"

	"github.com/spindle-lab/spindle/load"
	"github.com/spindle-lab/spindle/mock"
	"github.com/spindle-lab/spindle/server"
)

// MockArgs are the arguments of the mock child of c placed by h (nil:
// every role on this machine): it listens on every address where other
// hosts reach it.
func MockArgs(c Config, h *Hosts) []string {
	f := mock.DefaultFlags()
	f.Port, f.ThinkTime, f.Threads, f.CPUs = c.MockPort, c.MockThinkTime, c.MockThreads, c.MockCPUs
	if h.mockReached() {
		f.Host = ""
	}
	return append([]string{"mock"}, f.Args()...)
}

// ServerArgs are the arguments of the server child of c placed by h (nil:
// every role on this machine): it listens on every address where other
// hosts reach it, its admin port too where it runs on another host (this
// machine reads /debug/carrier), and calls the mock where h puts it. The
// tfb app's needs --db too, the run's database (DBArgs).
func ServerArgs(c Config, h *Hosts) []string {
	f := server.DefaultFlags()
	f.Mode, f.Port, f.Threads, f.Wait, f.Topology, f.AdminPort = c.Mode, c.ServerPort, c.Threads, c.Wait, c.Topology, c.AdminPort
	f.Backend = hostURL(h.backendAddr(), c.MockPort, "/fruits")
	f.Steal, f.NPlusOne, f.Float, f.BlockingEndpoint = c.WorkStealing, c.NPlus1, c.Float, c.BlockingEndpoint
	f.ParkIdle, f.WaitB, f.Slice, f.BatchOthers = c.ParkIdle, c.WaitB, server.SliceFlag(c.Slice), !c.NoBatch
	if !c.Float { // the process is started on its CPU set (startChild); floating carriers take no --cpuset
		f.CPUs = c.ServerCPUs
	}
	if c.Poller != "" {
		f.Poller = c.Poller
	}
	if c.BacklogPollGap > 0 {
		f.BacklogPollGap = c.BacklogPollGap
	}
	if h.serverReached() {
		f.Host = ""
	}
	if h != nil && h.Server != nil {
		f.AdminHost = ""
	}
	if c.TFB() {
		f.App = c.App
		if c.DBPool > 0 {
			f.DBPool = c.DBPool
		}
	}
	return append([]string{"serve"}, f.Args()...)
}

// DBArgs are the server child's arguments that name the run's database
// (none without one).
func DBArgs(db *DB) []string {
	if db == nil {
		return nil
	}
	return []string{"--db", db.DSN}
}

// LoadArgs are the arguments of the load generator child on this machine
// with the server where h puts it (nil: here): its JSON result, .hgrm
// files and interval log (one interval per HlogInterval of the window) go
// to the paths given.
func LoadArgs(c Config, h *Hosts, jsonPath, hgrmPrefix, hlogPath string) []string {
	f := loadFlags(c, jsonPath)
	f.Hgrm, f.Hlog = hgrmPrefix, hlogPath
	return append(append([]string{"load"}, f.Args()...), c.loadURL(h))
}

// loadURL is the URL the load generators send to: the server where h puts
// it, and loadPath.
func (c Config) loadURL(h *Hosts) string { return hostURL(h.serverAddr(), c.ServerPort, c.loadPath()) }

// loadFlags are the load generator's flags of c without its files other
// than its JSON result.
func loadFlags(c Config, jsonPath string) load.Flags {
	f := load.DefaultFlags()
	f.Threads, f.Connections, f.Duration, f.Warmup = c.LoadThreads, c.Connections, c.Duration, c.Warmup
	f.Latency, f.JSON, f.CPUs = true, jsonPath, c.LoadCPUs
	f.Mix = c.Mix
	f.HlogInterval = HlogInterval(c.Duration)
	if c.Rate > 0 {
		f.Rate, f.RateGiven = float64(c.Rate), true
	}
	return f
}

// Interval log resolution: the report draws load.hlog over time, one
// point per interval, so the interval sets what a timeline can show.
const (
	// TimelineInterval is the interval of a run's load.hlog: 100 ms, so
	// that a stall of a few hundred milliseconds shows as a gap or a spike
	// of its own instead of one second's p99 moving a little (the
	// HdrHistogram tools' convention, load.DefaultInterval, is 1 s).
	TimelineInterval = 100 * time.Millisecond
	// MaxTimelineIntervals bounds a log's intervals: a timeline plot is
	// about 700 pixels wide, so more points than that are not seen, and
	// at 0.4–0.7 kB a 100 ms interval (measured at 5,000–17,000 req/s) the
	// log stays under half a megabyte. Every load host of a multi-host run
	// logs at the same interval (loadFlags), as their merge needs.
	MaxTimelineIntervals = 600
)

// HlogInterval is the interval of the load.hlog of a measured window of
// the given length: TimelineInterval, or the multiple of it that keeps
// the log within MaxTimelineIntervals (1 s for a 10-minute window).
func HlogInterval(window time.Duration) time.Duration {
	n := (window + TimelineInterval*MaxTimelineIntervals - 1) / (TimelineInterval * MaxTimelineIntervals) // ceil
	return max(n, 1) * TimelineInterval
}
