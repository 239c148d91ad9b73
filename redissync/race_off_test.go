//go:build !race

package redissync

const raceOn = false
