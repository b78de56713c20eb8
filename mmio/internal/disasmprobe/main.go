// Command disasmprobe exists only to be linked by mmio's disassembly test: it references every mmio primitive so
// that the linked binary contains them, and is never run.
package main

import (
	"os"

	"github.com/goverbs/goverbs/mmio"
)

func main() {
	if len(os.Args) < 0 { // never true; keeps the calls from being run while keeping them linked
		return
	}
	var b [128]byte
	r, err := mmio.RegFromBytes(b[:])
	if err != nil || len(os.Args) > 0 {
		return
	}
	mmio.ToDeviceBarrier()
	mmio.FromDeviceBarrier()
	mmio.FlushWrites()
	mmio.WCStart()
	r.Write64(0, 1)
	r.Copy64(64, b[:64])
	r.CopyBlock(64, (*[64]byte)(b[:64]))
	r.WCWrite64(0, 1)
	r.WCCopyBlock(64, (*[64]byte)(b[:64]))
}
