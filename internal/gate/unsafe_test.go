package gate

import "unsafe"

func unsafeAt(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
