package bench

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestDBPIDs starts the runner's PostgreSQL and checks that PIDs finds the
// postmaster and its children (background workers start with it), each
// one's parent the postmaster as /proc says.
func TestDBPIDs(t *testing.T) {
	db, err := StartDB(context.Background(), nil)
	if errors.Is(err, ErrNoPostgres) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer db.Stop()
	pids := db.PIDs("")
	if len(pids) < 2 || pids[0] != db.srv.Pid() {
		t.Fatalf("PIDs = %v: want the postmaster %d first, then its children", pids, db.srv.Pid())
	}
	if slices.Contains(pids[1:], os.Getpid()) {
		t.Errorf("PIDs = %v holds this process", pids)
	}
	for _, p := range pids[1:] {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
		if err != nil {
			continue // exited meanwhile
		}
		if !strings.Contains(string(b), "\nPPid:\t"+strconv.Itoa(pids[0])+"\n") {
			t.Errorf("pid %d is not a child of the postmaster %d", p, pids[0])
		}
	}
}
