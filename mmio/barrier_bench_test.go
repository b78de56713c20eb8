package mmio

import "testing"

func BenchmarkToDeviceBarrier(b *testing.B) {
	for b.Loop() {
		ToDeviceBarrier()
	}
}

func BenchmarkFromDeviceBarrier(b *testing.B) {
	for b.Loop() {
		FromDeviceBarrier()
	}
}

func BenchmarkFlushWrites(b *testing.B) {
	for b.Loop() {
		FlushWrites()
	}
}
