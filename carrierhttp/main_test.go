package carrierhttp

import (
	"os"
	"testing"

	"github.com/spindle-lab/spindle/internal/testsvc"
)

// TestMain stops the PostgreSQL and Redis servers that the driver cases
// and benchmarks start (drivers_test.go) once the tests have run.
func TestMain(m *testing.M) { os.Exit(testsvc.Main(m)) }
