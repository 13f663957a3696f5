//go:build !race

package message_test

// raceEnabled is false outside the race detector (race_test.go).
const raceEnabled = false
