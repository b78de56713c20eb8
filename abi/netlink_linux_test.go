package abi

import (
	"fmt"
	"testing"
)

func TestRdmaNlType(t *testing.T) {
	for _, tc := range []struct {
		client, op, typ uint16
	}{
		// Message types from rdma-core-abi.md §2.2.
		{RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET, 0x1401},
		{RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET, 0x1406},
		{RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV, 0x140f},
		{0, 0, 0},
		{63, 1023, 0xffff},
	} {
		if got := RdmaNlGetType(tc.client, tc.op); got != tc.typ {
			t.Errorf("RdmaNlGetType(%d, %d) = %#x, want %#x", tc.client, tc.op, got, tc.typ)
		}
		if got := RdmaNlGetClient(tc.typ); got != tc.client {
			t.Errorf("RdmaNlGetClient(%#x) = %d, want %d", tc.typ, got, tc.client)
		}
		if got := RdmaNlGetOp(tc.typ); got != tc.op {
			t.Errorf("RdmaNlGetOp(%#x) = %d, want %d", tc.typ, got, tc.op)
		}
	}
	if got := RdmaNlGetType(64+RDMA_NL_NLDEV, 1024+RDMA_NLDEV_CMD_GET); got != 0x1401 {
		t.Errorf("out-of-range bits not discarded: got %#x", got)
	}
}

func ExampleRdmaNlGetType() {
	fmt.Printf("%#x\n", RdmaNlGetType(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV))
	// Output: 0x140f
}
