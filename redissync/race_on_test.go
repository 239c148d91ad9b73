//go:build race

package redissync

// raceOn: the race detector allows 8,128 goroutines at once.
const raceOn = true
