package observe

import (
	"bytes"
	"fmt"
	"strconv"
)

// parseKeyed reads the values of keys from the "key: value" lines of a
// /proc file (sched pads the key with spaces, status follows the colon
// with a tab) as unsigned integers, in the order of keys. Every key is
// required and the first line of each counts; other lines are skipped
// unread, which keeps the parse to a scan of the bytes (no allocation per
// line). name labels the errors ("sched").
func parseKeyed(name string, data []byte, keys ...string) ([]uint64, error) {
	vals := make([]uint64, len(keys))
	found := make([]bool, len(keys))
	left := len(keys)
	for len(data) > 0 && left > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		key, val, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		key = bytes.TrimSpace(key)
		for i, k := range keys {
			if found[i] || string(key) != k {
				continue
			}
			n, err := strconv.ParseUint(string(bytes.TrimSpace(val)), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("parse %s %s: %w", name, k, err)
			}
			vals[i], found[i] = n, true
			left--
		}
	}
	for i, k := range keys {
		if !found[i] {
			return nil, fmt.Errorf("parse %s: no %s line", name, k)
		}
	}
	return vals, nil
}
