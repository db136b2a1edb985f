// Command spindle is a runtime and a laboratory for latency-critical Go
// network services on Linux: a load generator, a system under test in three
// scheduling designs, a benchmark runner and the waiting-spectrum suite.
//
// Run "spindle help" for the subcommands.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err (one line) and maps it to the process exit status:
// 0 success, 2 bad input (usage, flags, unreachable targets), 3 an --slo
// threshold failed, 1 other failures.
func exitCode(err error, stderr *os.File) int {
	if err == nil || errors.Is(err, errHelp) {
		return 0
	}
	var es *exitStatus
	if errors.As(err, &es) {
		return es.code // the child said why on the shared stderr
	}
	fmt.Fprintf(stderr, "spindle: %v\n", err)
	if errors.Is(err, errBadInput) {
		return 2
	}
	if errors.Is(err, errSLOFailed) {
		return 3
	}
	return 1
}
