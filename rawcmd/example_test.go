package rawcmd_test

import (
	"errors"
	"fmt"
	"log"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// The bytes of a command, before it is sent: header and attributes as the kernel reads them.
func ExampleNew() {
	num := new(uint64)
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE, 14 /* RDMA_DRIVER_RXE */)
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, abi.SizeofIbUverbsGidEntry)
	cmd.U32In(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, unsafe.Pointer(num), 8)
	fmt.Println("object", cmd.Hdr.ObjectId, "method", cmd.Hdr.MethodId, "driver", cmd.Hdr.DriverId, "attributes", cmd.NumAttrs())
	// Output: object 0 method 5 driver 14 attributes 3
}

// A conformance test sends exactly the command it wants and asserts the kernel's errno: here a GID table query
// into a buffer of no entries, which the kernel refuses with EINVAL.
func ExampleCmd_Invoke() {
	ctx, err := uverbs.Open("rxe0")
	if err != nil {
		log.Fatal(err)
	}
	defer ctx.Close()
	var entry abi.IbUverbsGidEntry
	num := new(uint64)
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_GID_TABLE, uint32(ctx.DriverID()))
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_GID_TABLE_ENTRY_SIZE, uint64(unsafe.Sizeof(entry)))
	cmd.U32In(abi.UVERBS_ATTR_QUERY_GID_TABLE_FLAGS, 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_ENTRIES, unsafe.Pointer(&entry), 0)
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_GID_TABLE_RESP_NUM_ENTRIES, unsafe.Pointer(num), 8)
	err = cmd.Invoke(ctx.FD())
	fmt.Println(errors.Is(err, unix.EINVAL))
}
