package rxe

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/goverbs/goverbs/verbs"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"golang.org/x/sys/unix"
)

// kernelWC is a completion as the kernel writes it, with kernel-numbered flags (kernelWC*); imm is given in host
// order and stored big-endian when the WITH_IMM flag is set, host order otherwise (invalidate_rkey).
func kernelWC(id uint64, flags uint32, imm uint32) abi.IbUverbsWc {
	wc := abi.IbUverbsWc{
		WrId: id, Status: uint32(id % 3), Opcode: 128, VendorErr: 0x55, ByteLen: uint32(id) * 10,
		QpNum: 0x11, SrcQp: 0x22, WcFlags: flags, PkeyIndex: 1, Slid: 2, Sl: 3, DlidPathBits: 4, PortNum: 1,
	}
	if flags&kernelWCWithImm != 0 {
		binary.BigEndian.PutUint32(wc.Ex[:], imm)
	} else {
		binary.NativeEndian.PutUint32(wc.Ex[:], imm)
	}
	return wc
}

func checkWC(t *testing.T, got verbs.WC, id uint64, flags verbs.WCFlags, imm uint32) {
	t.Helper()
	want := verbs.WC{
		WRID: id, Status: verbs.WCStatus(id % 3), Opcode: verbs.WCRecv, VendorErr: 0x55, ByteLen: uint32(id) * 10,
		Imm: imm, QPNum: 0x11, SrcQP: 0x22, Flags: flags, PKeyIndex: 1, SLID: 2, SL: 3,
		DLIDPathBits: 4, PortNum: 1,
	}
	if got != want {
		t.Errorf("completion\n got %+v\nwant %+v", got, want)
	}
}

func TestPoll(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(6) // 8 slots, capacity 7
	wc := make([]verbs.WC, 5)
	if n := pollN(c.Poll(wc)); n != 0 {
		t.Fatalf("Poll on an empty CQ = %d", n)
	}
	// What the kernel writes, and what Poll must return.
	kflags := [3]uint32{kernelWCGRH | kernelWCWithImm, kernelWCGRH | kernelWCWithInvalidate, 0}
	flags := [3]verbs.WCFlags{verbs.WCWithGRH | verbs.WCWithImm, verbs.WCWithGRH | verbs.WCWithInv, 0}
	var produced, polled uint64
	for round := 0; round < 200; round++ {
		// Produce 1..7 completions, alternating imm / invalidate / plain.
		for i := 0; i <= round%7; i++ {
			id := produced
			if !c.produce(kernelWC(id, kflags[id%3], uint32(id)*0x01010101+0x0a0b0c0d)) {
				t.Fatalf("round %d: CQ full with %d outstanding", round, produced-polled)
			}
			produced++
		}
		for polled < produced {
			n := pollN(c.Poll(wc))
			if n == 0 || n > len(wc) {
				t.Fatalf("round %d: Poll = %d with %d outstanding", round, n, produced-polled)
			}
			for i := 0; i < n; i++ {
				id := polled
				checkWC(t, wc[i], id, flags[id%3], uint32(id)*0x01010101+0x0a0b0c0d)
				polled++
			}
		}
		if n := pollN(c.Poll(wc)); n != 0 {
			t.Fatalf("round %d: Poll after draining = %d", round, n)
		}
	}
	// Poll with an empty slice consumes nothing.
	c.produce(kernelWC(1, 0, 0))
	if n := pollN(c.Poll(nil)); n != 0 || pending(c.k) != 1 {
		t.Fatalf("Poll(nil) = %d, %d pending", n, pending(c.k))
	}
}

func TestWCFlags(t *testing.T) {
	tests := []struct {
		kernel uint32
		want   verbs.WCFlags
	}{
		{0, 0},
		{kernelWCGRH, verbs.WCWithGRH},
		{kernelWCWithImm, verbs.WCWithImm},
		{kernelWCWithInvalidate, verbs.WCWithInv},
		{kernelWCIPCSumOK, verbs.WCIPCSumOK},
		{kernelWCGRH | kernelWCWithInvalidate, verbs.WCWithGRH | verbs.WCWithInv},
		{0xf, verbs.WCWithGRH | verbs.WCWithImm | verbs.WCWithInv | verbs.WCIPCSumOK},
		{0x70 | kernelWCWithImm, verbs.WCWithImm}, // SMAC, VLAN, network header type: dropped
	}
	for _, tc := range tests {
		if got := wcFlags(tc.kernel); got != tc.want {
			t.Errorf("wcFlags(%#x) = %#x, want %#x", tc.kernel, got, tc.want)
		}
	}
}

func TestCQResize(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(3)
	c.produce(kernelWC(1, 0, 0))
	newMI, newK := k.ring(31, abi.SizeofIbUverbsWc)
	// The kernel copies the pending completion into the new ring before answering.
	*(*abi.IbUverbsWc)(newK.elem(0)) = kernelWC(1, 0, 0)
	newK.publish(0)
	if n, err := c.Resize(31, respond[int](&abi.RxeResizeCqResp{Mi: newMI}, 31)); err != nil || n != 31 {
		t.Fatalf("Resize = %d, %v", n, err)
	}
	if c.q.capacity() != 31 {
		t.Fatalf("capacity after resize %d, want 31", c.q.capacity())
	}
	wc := make([]verbs.WC, 40)
	if n := pollN(c.Poll(wc)); n != 1 {
		t.Fatalf("Poll after resize = %d, want 1", n)
	}
	checkWC(t, wc[0], 1, 0, 0)
	if newK.consumer() != 1 {
		t.Fatalf("consumer index of the new ring %d, want 1", newK.consumer())
	}
	// A failed resize leaves the ring alone.
	if _, err := c.Resize(31, fail[int, int](unix.ENOMEM)); !errors.Is(err, unix.ENOMEM) {
		t.Fatalf("Resize error %v", err)
	}
	if !c.q.mapped() {
		t.Fatal("failed resize unmapped the ring")
	}
	// A resize whose new ring cannot be mapped leaves a CQ that polls nothing.
	if _, err := c.Resize(31, respond[int](&abi.RxeResizeCqResp{}, 31)); err == nil {
		t.Fatal("Resize accepted an empty mminfo")
	}
	if n := pollN(c.Poll(wc)); n != 0 {
		t.Fatalf("Poll without a ring = %d", n)
	}
	c.Destroyed()
	if n := pollN(c.Poll(wc)); n != 0 {
		t.Fatalf("Poll after Destroyed = %d", n)
	}
}

// Arm sends REQ_NOTIFY_CQ {cq_handle, solicited_only} through INVOKE_WRITE; the memfd answers the ioctl with
// ENOTTY, after which the command the CQ built can be inspected.
func TestArmCommand(t *testing.T) {
	k := newFakeKernel(t)
	c := k.newCQ(3)
	for _, solicited := range []bool{false, true} {
		err := c.Arm(solicited)
		if !errors.Is(err, unix.ENOTTY) {
			t.Fatalf("Arm on a memfd = %v, want ENOTTY", err)
		}
		cmd := &c.arm.cmd
		if cmd.Hdr.ObjectId != abi.UVERBS_OBJECT_DEVICE || cmd.Hdr.MethodId != abi.UVERBS_METHOD_INVOKE_WRITE ||
			cmd.Hdr.DriverId != abi.RDMA_DRIVER_RXE {
			t.Fatalf("header %+v is not DEVICE/INVOKE_WRITE for rxe", cmd.Hdr)
		}
		var sawIn, sawCmd bool
		for i := 0; i < cmd.NumAttrs(); i++ {
			a := cmd.Attrs[i]
			switch a.AttrId {
			case abi.UVERBS_ATTR_CORE_IN:
				sawIn = true
				want := uint64(0x77)
				if solicited {
					want |= 1 << 32
				}
				if a.Len != abi.SizeofIbUverbsReqNotifyCq || a.Data != want {
					t.Errorf("CORE_IN len %d data %#x, want %d bytes %#x inline", a.Len, a.Data, abi.SizeofIbUverbsReqNotifyCq, want)
				}
			case abi.UVERBS_ATTR_WRITE_CMD:
				sawCmd = true
				if a.Data != abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ {
					t.Errorf("WRITE_CMD %d, want %d", a.Data, abi.IB_USER_VERBS_CMD_REQ_NOTIFY_CQ)
				}
			default:
				t.Errorf("unexpected attribute %d", a.AttrId)
			}
		}
		if !sawIn || !sawCmd {
			t.Errorf("CORE_IN present %v, WRITE_CMD present %v", sawIn, sawCmd)
		}
	}
	c.Destroyed()
	if err := c.Arm(false); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("Arm after Destroyed = %v", err)
	}
}

// A ring whose elements cannot hold a 48-byte completion is refused, as rdma-core does.
func TestCreateCQRejectsSmallElements(t *testing.T) {
	k := newFakeKernel(t)
	mi, _ := k.ring(3, 48)
	if _, err := unixPwriteU32(k.fd, int64(mi.Offset), 5); err != nil { // log2_elem_size 5: 32 bytes
		t.Fatal(err)
	}
	p := provider.CQParams{CQE: 3}
	if _, _, err := k.context().CreateCQ(p, respond[provider.CQParams](&abi.RxeCreateCqResp{Mi: mi}, provider.CQResult{CQE: 3})); err == nil {
		t.Fatal("CreateCQ accepted 32-byte elements")
	}
	// The exec error is returned as it is, for the core to wrap.
	if _, _, err := k.context().CreateCQ(p, fail[provider.CQParams, provider.CQResult](unix.EINVAL)); err != unix.EINVAL {
		t.Fatalf("CreateCQ exec error = %v", err)
	}
}

func unixPwriteU32(fd int, off int64, v uint32) (int, error) {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], v)
	return unix.Pwrite(fd, b[:], off)
}

// FuzzPoll lets the "kernel" leave arbitrary (even unmasked or inconsistent) indices and entry bytes in the
// ring: Poll returns at most what fits, never more than the ring holds, and moves the consumer index by exactly
// what it returned.
func FuzzPoll(f *testing.F) {
	f.Add(uint32(0), uint32(0), uint8(4), []byte{})
	f.Add(uint32(3), uint32(1), uint8(1), []byte{1, 2, 3})
	f.Add(uint32(0xffffffff), uint32(0x80000000), uint8(255), []byte{0xff, 0xff, 0xff, 0xff, 0x02})
	f.Fuzz(func(t *testing.T, prod, cons uint32, want uint8, entries []byte) {
		k := newFakeKernel(t)
		c := k.newCQ(7)
		for i := 0; i <= int(c.k.mask); i++ {
			slot := unsafeBytes(c.k.elem(uint32(i)), c.k.elemSize())
			for j := range slot {
				if len(entries) > 0 {
					slot[j] = entries[(i*len(slot)+j)%len(entries)]
				}
			}
		}
		*c.k.prod, *c.k.cons = prod, cons
		wc := make([]verbs.WC, int(want))
		n := pollN(c.Poll(wc))
		avail := int((prod - cons) & c.k.mask)
		if n > len(wc) || n > c.k.capacity() || n != min(avail, len(wc)) {
			t.Fatalf("Poll = %d with %d available and room for %d", n, avail, len(wc))
		}
		if got, wantCons := c.k.consumer(), (cons+uint32(n))&c.k.mask; got != wantCons {
			t.Fatalf("consumer index %d after %d completions from %d, want %d", got, n, cons&c.k.mask, wantCons)
		}
	})
}
