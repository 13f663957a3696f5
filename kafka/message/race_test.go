//go:build race

package message_test

// raceEnabled: under the race detector sync.Pool drops what it is given at
// random, so a path that reuses pooled readers allocates now and then.
const raceEnabled = true
