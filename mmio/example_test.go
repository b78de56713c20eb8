package mmio_test

import (
	"encoding/binary"
	"fmt"
	"log"
	"unsafe"

	"github.com/goverbs/goverbs/mmio"
)

// A doorbell write as a provider does it, here on normal memory standing in for a device page (on a device the
// window is the UAR page from the context's mmap): WCStart, one exact 8-byte store, FlushWrites.
func ExampleReg_WCWrite64() {
	page := make([]uint64, 512) // 4 KiB, 8-byte aligned
	reg, err := mmio.RegFromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&page[0])), 4096))
	if err != nil {
		log.Fatal(err)
	}
	// The doorbell's bytes are big-endian on the wire: load them natively, store them as they are.
	db := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 0x0000002a), 0x00001234)
	reg.WCWrite64(0x800, binary.NativeEndian.Uint64(db))
	b := unsafe.Slice((*byte)(unsafe.Pointer(&page[0])), 4096)
	fmt.Printf("% x\n", b[0x800:0x808])
	// Output: 00 00 00 2a 00 00 12 34
}
