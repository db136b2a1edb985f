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
		flags:   versionFlags,
		run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
			pos, err := versionFlags().parse(args, stdout)
			if err != nil {
				return err
			}
			if len(pos) > 0 {
				return badInput("version takes no arguments (got %q)", pos[0])
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

func versionFlags() *flagSet {
	fs := newFlagSet("version", "", "Prints spindle's version (set at link time, else \"dev\"), the Go version, the platform\n"+
		"and the VCS revision the binary was built from.")
	fs.example("spindle version")
	return fs
}
