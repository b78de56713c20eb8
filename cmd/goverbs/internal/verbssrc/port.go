package verbssrc

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rawcmd"
	"github.com/goverbs/goverbs/uverbs"
)

// Kernel ABI of the device methods rdma-core 65 uses and package uverbs does
// not (yet) wrap (include/uapi/rdma/ib_user_ioctl_cmds.h and
// ib_user_ioctl_verbs.h as rdma-core 65 ships them).
const (
	methodQueryPortSpeed     = abi.UVERBS_METHOD_QUERY_GID_ENTRY + 1 // UVERBS_METHOD_QUERY_PORT_SPEED
	attrQueryPortSpeedPort   = 0                                     // UVERBS_ATTR_QUERY_PORT_SPEED_PORT_NUM
	attrQueryPortSpeedResp   = 1                                     // UVERBS_ATTR_QUERY_PORT_SPEED_RESP
	activeSpeedExOffset      = unsafe.Sizeof(abi.IbUverbsQueryPortResp{}) + 4
	queryPortRespExFullBytes = activeSpeedExOffset + 4 // struct ib_uverbs_query_port_resp_ex with active_speed_ex
)

// PortSpeed is rdma-core 65's ibv_query_port_speed: the effective bandwidth
// of port in units of 100 Mb/s (ibv_devinfo prints it /10 as Gb/s). As in
// rdma-core 65 only the mlx5 and efa providers implement it (the kernel's
// QUERY_PORT_SPEED method); the others fail with EOPNOTSUPP, as does a
// kernel without the method.
func PortSpeed(ctx *uverbs.Context, port int) (uint64, error) {
	switch ctx.DriverID() {
	case abi.RDMA_DRIVER_MLX5, abi.RDMA_DRIVER_EFA:
	default:
		return 0, fmt.Errorf("query port %d speed of %s: %w", port, ctx.Name(), unix.EOPNOTSUPP)
	}
	var speed uint64
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, methodQueryPortSpeed, uint32(ctx.DriverID()))
	cmd.ConstIn(attrQueryPortSpeedPort, uint64(uint32(port)))
	cmd.PtrOut(attrQueryPortSpeedResp, unsafe.Pointer(&speed), int(unsafe.Sizeof(speed)))
	if err := cmd.Invoke(ctx.FD()); err != nil {
		return 0, fmt.Errorf("query port %d speed of %s: %w", port, ctx.Name(), err)
	}
	return speed, nil
}

// ActiveSpeedEx is the active_speed_ex field rdma-core 65's ibv_query_port
// fills from the kernel's QUERY_PORT response (the port's speed as a 32-bit
// value, needed from XDR on), 0 from kernels whose response does
// not carry it.
func ActiveSpeedEx(ctx *uverbs.Context, port int) (uint32, error) {
	var resp [queryPortRespExFullBytes]byte
	cmd := rawcmd.New(abi.UVERBS_OBJECT_DEVICE, abi.UVERBS_METHOD_QUERY_PORT, uint32(ctx.DriverID()))
	cmd.ConstIn(abi.UVERBS_ATTR_QUERY_PORT_PORT_NUM, uint64(port))
	cmd.PtrOut(abi.UVERBS_ATTR_QUERY_PORT_RESP, unsafe.Pointer(&resp), len(resp))
	if err := cmd.Invoke(ctx.FD()); err != nil {
		return 0, fmt.Errorf("query port %d of %s: %w", port, ctx.Name(), err)
	}
	return binary.NativeEndian.Uint32(resp[activeSpeedExOffset:]), nil
}
