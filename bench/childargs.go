package bench

import (
	"strconv"

	"github.com/spindle-lab/spindle/mock"
)

// MockArgs are the arguments of the mock child.
func MockArgs(c Config) []string {
	f := mock.DefaultFlags()
	f.Port, f.ThinkTime, f.Threads, f.CPUs = c.MockPort, c.MockThinkTime, c.MockThreads, c.MockCPUs
	return append([]string{"mock"}, f.Args()...)
}

// ServerArgs are the arguments of the server child.
func ServerArgs(c Config) []string {
	a := []string{"serve", "--mode", c.Mode, "--port", strconv.Itoa(c.ServerPort),
		"--backend", "http://127.0.0.1:" + strconv.Itoa(c.MockPort) + "/fruits", "--threads", strconv.Itoa(c.Threads),
		"--wait", c.Wait, "--topology", c.Topology, "--admin-port", strconv.Itoa(c.AdminPort)}
	if c.Float { // the process is started on its CPU set (startChild); floating carriers take no --cpuset
		a = append(a, "--float")
	} else {
		a = append(a, "--cpuset", c.ServerCPUs.String())
	}
	if c.WorkStealing {
		a = append(a, "--ws")
	}
	if c.Poller != "" {
		a = append(a, "--poller", c.Poller)
	}
	if c.NPlus1 {
		a = append(a, "--nplus1")
	}
	return a
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
