package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise
// the VCS revision recorded by the Go toolchain is shown.
var version = "dev"

func init() {
	register(command{
		name:    "version",
		summary: "print spindle's version, the Go version and the VCS revision",
		run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
			if len(args) > 0 {
				return badInput("version takes no arguments")
			}
			rev := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, s := range bi.Settings {
					if s.Key == "vcs.revision" {
						rev = s.Value
					}
				}
			}
			fmt.Fprintf(stdout, "spindle %s (%s, %s/%s, revision %s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH, rev)
			return nil
		},
	})
}
