package unix

import (
	xunix "golang.org/x/sys/unix"
)

// IsTerminal reports whether fd is a terminal (the TCGETS ioctl succeeds).
func IsTerminal(fd int) bool {
	_, err := xunix.IoctlGetTermios(fd, xunix.TCGETS)
	return err == nil
}
