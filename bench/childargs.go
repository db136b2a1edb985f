package bench

import (
	"strconv"

	"github.com/spindle-lab/spindle/mock"
	"github.com/spindle-lab/spindle/server"
)

// MockArgs are the arguments of the mock child.
func MockArgs(c Config) []string {
	f := mock.DefaultFlags()
	f.Port, f.ThinkTime, f.Threads, f.CPUs = c.MockPort, c.MockThinkTime, c.MockThreads, c.MockCPUs
	return append([]string{"mock"}, f.Args()...)
}

// ServerArgs are the arguments of the server child.
func ServerArgs(c Config) []string {
	f := server.DefaultFlags()
	f.Mode, f.Port, f.Threads, f.Wait, f.Topology, f.AdminPort = c.Mode, c.ServerPort, c.Threads, c.Wait, c.Topology, c.AdminPort
	f.Backend = "http://127.0.0.1:" + strconv.Itoa(c.MockPort) + "/fruits"
	f.Steal, f.NPlusOne, f.Float = c.WorkStealing, c.NPlus1, c.Float
	if !c.Float { // the process is started on its CPU set (startChild); floating carriers take no --cpuset
		f.CPUs = c.ServerCPUs
	}
	if c.Poller != "" {
		f.Poller = c.Poller
	}
	return append([]string{"serve"}, f.Args()...)
}

// LoadArgs are the arguments of the load generator child: its JSON result,
// .hgrm files and interval log (load.DefaultInterval) go to the paths given.
func LoadArgs(c Config, jsonPath, hgrmPrefix, hlogPath string) []string {
	a := loadFlags(c, jsonPath)
	a = append(a, "--hgrm", hgrmPrefix, "--hlog", hlogPath)
	return append(a, hostURL("127.0.0.1", c.ServerPort, "/fruits"))
}

// loadFlags are the load generator's flags without its URL and files
// other than its JSON result.
func loadFlags(c Config, jsonPath string) []string {
	a := []string{"load", "-t", strconv.Itoa(c.LoadThreads), "-c", strconv.Itoa(c.Connections),
		"-d", c.Duration.String(), "--warmup", c.Warmup.String(), "--latency",
		"--json", jsonPath, "--cpuset", c.LoadCPUs.String()}
	if c.Rate > 0 {
		a = append(a, "-R", strconv.Itoa(c.Rate))
	}
	return a
}
