package abi

import "unsafe"

// The generated types take their padding from an LP64 build, where __u64 is
// 8-byte aligned. On 32-bit targets (386, arm, mips) __u64 is 4-byte aligned
// in C, so the blank padding fields would no longer match the C layout.
// This fails to compile there instead of producing wrong layouts.
var _ [unsafe.Alignof(uint64(0)) - 8]struct{}
