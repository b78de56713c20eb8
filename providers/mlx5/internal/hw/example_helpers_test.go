package hw_test

import "unsafe"

// asBytes views 8-byte-aligned memory as bytes (mmap gives page-aligned memory in real use).
func asBytes(w []uint64) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8) }
