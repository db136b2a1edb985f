//go:build race

package load

// raceEnabled reports a -race build, where some allocation counts differ.
const raceEnabled = true
