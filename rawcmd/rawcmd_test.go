package rawcmd

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
)

func TestLayout(t *testing.T) {
	var c Cmd
	if off := unsafe.Offsetof(c.Attrs); off != abi.SizeofIbUverbsIoctlHdr {
		t.Fatalf("attrs must follow the 24-byte header directly; offset %d", off)
	}
}

func TestEncodings(t *testing.T) {
	c := New(3, 0, 14)
	small := [4]byte{1, 2, 3, 4}
	big := new([20]byte)
	iIn := c.PtrIn(1, unsafe.Pointer(&small), 4)
	iBig := c.PtrIn(2, unsafe.Pointer(big), 20)
	out := new(uint32)
	iOut := c.PtrOut(3, unsafe.Pointer(out), 4)
	iConst := c.ConstIn(4, 0x1234)
	iObj := c.Object(5, 7)
	iNew := c.NewObject(6)
	iFD := c.FD(7, 9)
	c.Optional(iFD)
	iEnum := c.EnumIn(8, 3, nil, 0)

	if c.NumAttrs() != 8 {
		t.Fatalf("NumAttrs %d", c.NumAttrs())
	}
	a := c.Attrs[iIn]
	var want [8]byte
	copy(want[:], small[:])
	if a.Len != 4 || a.Data != binary.NativeEndian.Uint64(want[:]) || a.Flags != abi.UVERBS_ATTR_F_MANDATORY {
		t.Errorf("inline PTR_IN: %+v", a)
	}
	if a := c.Attrs[iBig]; a.Len != 20 || a.Data != uint64(uintptr(unsafe.Pointer(big))) {
		t.Errorf("pointer PTR_IN: %+v", a)
	}
	if a := c.Attrs[iOut]; a.Len != 4 || a.Data != uint64(uintptr(unsafe.Pointer(out))) {
		t.Errorf("PTR_OUT must always be a pointer: %+v", a)
	}
	if a := c.Attrs[iConst]; a.Len != 8 || a.Data != 0x1234 {
		t.Errorf("CONST_IN: %+v", a)
	}
	if a := c.Attrs[iObj]; a.Len != 0 || a.Data != 7 {
		t.Errorf("IDR: %+v", a)
	}
	if a := c.Attrs[iNew]; a.Len != 0 || a.Data != 0 {
		t.Errorf("IDR new: %+v", a)
	}
	if a := c.Attrs[iFD]; a.Flags != 0 || a.Data != 9 {
		t.Errorf("optional FD: %+v", a)
	}
	if a := c.Attrs[iEnum]; a.EnumData().ElemId != 3 {
		t.Errorf("ENUM_IN elem: %+v", a)
	}
	c.Attrs[iNew].Data = 42
	if c.Handle(iNew) != 42 {
		t.Errorf("Handle readback")
	}
	c.Reset(1, 2, 3)
	if c.NumAttrs() != 0 || c.Attrs[0] != (abi.IbUverbsAttr{}) || c.keep[1] != nil {
		t.Errorf("Reset left state behind")
	}
}

func TestTooManyAttrs(t *testing.T) {
	c := New(0, 0, 0)
	for i := 0; i < MaxAttrs+1; i++ {
		c.ConstIn(uint16(i), 0)
	}
	f, _ := os.Open(os.DevNull)
	defer f.Close()
	if err := c.Invoke(int(f.Fd())); err == nil {
		t.Fatal("want a build error for too many attributes")
	}
}

func TestInvokeAllocatesNothing(t *testing.T) {
	f, _ := os.Open(os.DevNull)
	defer f.Close()
	fd := int(f.Fd())
	c := New(0, 0, 14)
	v := new(uint64)
	if n := testing.AllocsPerRun(100, func() {
		c.Reset(3, 0, 14)
		c.PtrOut(1, unsafe.Pointer(v), 8)
		c.ConstIn(2, 5)
		_ = c.Invoke(fd)
	}); n != 0 {
		t.Fatalf("building and invoking a command allocates %v times, want 0", n)
	}
}

// Describe lists every attribute, inputs with their data, the named outputs as "out".
func TestDescribe(t *testing.T) {
	c := New(14, 0, 1)
	c.NewObject(0)
	c.U64In(1, 5000)
	c.Optional(c.ConstIn(4098, 0))
	var v uint16
	c.PtrOut(4097, unsafe.Pointer(&v), 2)
	if got, want := c.Describe(0, 4097), "0:0:1:out,1:8:1:5000,4098:8:0:0,4097:2:1:out"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}
