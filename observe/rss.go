package observe

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ReadRSS returns the resident set size of process pid, in bytes, from
// root/PID/statm (root "": DefaultProcRoot).
func ReadRSS(root string, pid int) (int64, error) {
	if root == "" {
		root = DefaultProcRoot
	}
	data, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0, fmt.Errorf("read rss: %w", err)
	}
	return ParseStatmRSS(data, os.Getpagesize())
}

// ParseStatmRSS parses the text of /proc/PID/statm ("size resident shared
// text lib data dt", in pages) and returns the resident size in bytes.
func ParseStatmRSS(data []byte, pageSize int) (int64, error) {
	f := bytes.Fields(data)
	if len(f) < 2 {
		return 0, fmt.Errorf("parse statm: %d fields, want at least 2", len(f))
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 {
		return 0, fmt.Errorf("parse statm resident %q: want a page count", f[1])
	}
	if pageSize <= 0 || pages > (1<<62)/int64(pageSize) {
		return 0, fmt.Errorf("parse statm: %d pages of %d bytes out of range", pages, pageSize)
	}
	return pages * int64(pageSize), nil
}
