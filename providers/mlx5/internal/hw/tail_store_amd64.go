//go:build amd64 && !race

package hw

// storeTail is a plain store: amd64 does not reorder a store before earlier loads (see tail.go).
func storeTail(p *uint32, v uint32) { *p = v }
