// Package rawcmd is the raw uverbs command layer: it builds an RDMA_VERBS_IOCTL command (header plus attribute
// array) for any object, method and attributes, or a legacy command tunnelled through UVERBS_METHOD_INVOKE_WRITE,
// sends it, and reads back what the kernel wrote. The verbs API (package uverbs) is built on it, and conformance
// tests use it directly to send exactly the bytes they want and assert the errno.
//
// Attribute encodings follow the kernel's rules (drivers/infiniband/core/uverbs_ioctl.c): PTR_IN data of up to 8
// bytes travels inline in the attribute, longer data by pointer; PTR_OUT always by pointer; object handles and
// file descriptors in the data field with length 0; new handles and fds are written back by the kernel into the
// same attribute's data. Every attribute is MANDATORY unless Optional is called for it, as rdma-core does.
//
// # Memory
//
// A Cmd must live on the heap (use New) and the memory its pointer attributes refer to must stay reachable and
// unmoved until Invoke returns: the Cmd keeps a reference to each such buffer, so heap buffers passed in are kept
// alive by it (and escape analysis moves anything passed to it off the stack). mmap'd memory is always fine.
package rawcmd

import (
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/ioctl"
)

// MaxAttrs is the largest number of attributes one Cmd holds. The kernel accepts a command of up to one page
// (24 + 16·n ≤ 4096); no uverbs method has more than a few dozen attributes.
const MaxAttrs = 48

// Cmd is one ioctl command: the header immediately followed by its attributes, as the kernel reads them.
type Cmd struct {
	Hdr   abi.IbUverbsIoctlHdr
	Attrs [MaxAttrs]abi.IbUverbsAttr
	keep  [MaxAttrs]unsafe.Pointer
	err   error
}

// New returns an empty command for object/method, addressed to the driver driverID (the kernel refuses a
// command whose driver id does not match the device's with EINVAL).
func New(object, method uint16, driverID uint32) *Cmd {
	c := new(Cmd)
	c.Reset(object, method, driverID)
	return c
}

// Reset clears c for reuse with a new object/method.
func (c *Cmd) Reset(object, method uint16, driverID uint32) {
	n := int(c.Hdr.NumAttrs)
	for i := 0; i < n; i++ {
		c.Attrs[i] = abi.IbUverbsAttr{}
		c.keep[i] = nil
	}
	c.Hdr = abi.IbUverbsIoctlHdr{ObjectId: object, MethodId: method, DriverId: driverID}
	c.err = nil
}

// NumAttrs is the number of attributes added so far.
func (c *Cmd) NumAttrs() int { return int(c.Hdr.NumAttrs) }

// Attr appends an attribute with the given id, MANDATORY, zero length and data, and returns its index. Callers
// that want to send arbitrary bytes set the fields of c.Attrs[i] directly.
func (c *Cmd) Attr(id uint16) int {
	i := int(c.Hdr.NumAttrs)
	if i >= MaxAttrs {
		if c.err == nil {
			c.err = fmt.Errorf("rawcmd: more than %d attributes", MaxAttrs)
		}
		return MaxAttrs - 1
	}
	c.Hdr.NumAttrs++
	c.Attrs[i] = abi.IbUverbsAttr{AttrId: id, Flags: abi.UVERBS_ATTR_F_MANDATORY}
	return i
}

// Optional clears the MANDATORY flag of attribute i: a kernel that does not know it ignores it.
func (c *Cmd) Optional(i int) { c.Attrs[i].Flags &^= abi.UVERBS_ATTR_F_MANDATORY }

// PtrIn adds a PTR_IN attribute carrying n bytes at p: inline when n ≤ 8, else by pointer.
func (c *Cmd) PtrIn(id uint16, p unsafe.Pointer, n int) int {
	i := c.Attr(id)
	c.setLen(i, n)
	if n <= 8 {
		var v uint64
		copy((*[8]byte)(unsafe.Pointer(&v))[:n], unsafe.Slice((*byte)(p), n))
		c.Attrs[i].Data = v
		return i
	}
	c.keep[i] = p
	c.Attrs[i].Data = uint64(uintptr(p))
	return i
}

// BytesIn adds a PTR_IN attribute carrying b (inline when ≤ 8 bytes). An empty b adds a zero-length attribute.
func (c *Cmd) BytesIn(id uint16, b []byte) int {
	if len(b) == 0 {
		i := c.Attr(id)
		return i
	}
	return c.PtrIn(id, unsafe.Pointer(&b[0]), len(b))
}

// PtrOut adds a PTR_OUT attribute: the kernel writes up to n bytes at p and sets UVERBS_ATTR_F_VALID_OUTPUT.
func (c *Cmd) PtrOut(id uint16, p unsafe.Pointer, n int) int {
	i := c.Attr(id)
	c.setLen(i, n)
	c.keep[i] = p
	c.Attrs[i].Data = uint64(uintptr(p))
	return i
}

// BytesOut adds a PTR_OUT attribute over b.
func (c *Cmd) BytesOut(id uint16, b []byte) int {
	if len(b) == 0 {
		return c.Attr(id)
	}
	return c.PtrOut(id, unsafe.Pointer(&b[0]), len(b))
}

// ConstIn adds a CONST_IN attribute (an 8-byte inline value, range-checked by the kernel).
func (c *Cmd) ConstIn(id uint16, v uint64) int {
	i := c.Attr(id)
	c.Attrs[i].Len = 8
	c.Attrs[i].Data = v
	return i
}

// U32In adds a 4-byte inline PTR_IN attribute (also the encoding of a 32-bit FLAGS_IN attribute).
func (c *Cmd) U32In(id uint16, v uint32) int {
	i := c.Attr(id)
	c.Attrs[i].Len = 4
	c.Attrs[i].Data = uint64(v)
	return i
}

// U64In adds an 8-byte inline PTR_IN attribute (also the encoding of a 64-bit FLAGS_IN attribute).
func (c *Cmd) U64In(id uint16, v uint64) int { return c.ConstIn(id, v) }

// EnumIn adds an ENUM_IN attribute: elem selects the enum element, p/n its payload (may be empty).
func (c *Cmd) EnumIn(id uint16, elem uint8, p unsafe.Pointer, n int) int {
	var i int
	if n == 0 {
		i = c.Attr(id)
	} else {
		i = c.PtrIn(id, p, n)
	}
	c.Attrs[i].EnumData().ElemId = elem
	return i
}

// Object adds an IDR attribute naming an existing object by its kernel handle.
func (c *Cmd) Object(id uint16, handle uint32) int {
	i := c.Attr(id)
	c.Attrs[i].Data = uint64(handle)
	return i
}

// NewObject adds an IDR attribute for the object the method creates; read the new handle with Handle(i).
func (c *Cmd) NewObject(id uint16) int { return c.Attr(id) }

// FD adds an FD attribute naming an existing file descriptor.
func (c *Cmd) FD(id uint16, fd int) int {
	i := c.Attr(id)
	c.Attrs[i].Data = uint64(int64(fd))
	return i
}

// NewFD adds an FD attribute for the file the method creates; read it with FDOut(i).
func (c *Cmd) NewFD(id uint16) int { return c.Attr(id) }

// Handle returns the object handle the kernel wrote into attribute i.
func (c *Cmd) Handle(i int) uint32 { return uint32(c.Attrs[i].Data) }

// FDOut returns the file descriptor the kernel wrote into attribute i.
func (c *Cmd) FDOut(i int) int { return int(int32(c.Attrs[i].Data)) }

// Valid reports whether the kernel wrote output attribute i (UVERBS_ATTR_F_VALID_OUTPUT).
func (c *Cmd) Valid(i int) bool { return c.Attrs[i].Flags&abi.UVERBS_ATTR_F_VALID_OUTPUT != 0 }

func (c *Cmd) setLen(i, n int) {
	if n < 0 || n > 0xffff {
		if c.err == nil {
			c.err = fmt.Errorf("rawcmd: attribute %#x length %d out of range", c.Attrs[i].AttrId, n)
		}
		return
	}
	c.Attrs[i].Len = uint16(n)
}

// Invoke sends the command on the uverbs command fd. It returns a build error (too many attributes, a length
// out of range) or the kernel's errno as unix.Errno. It does not allocate.
func (c *Cmd) Invoke(fd int) error {
	if c.err != nil {
		return c.err
	}
	c.Hdr.Length = uint16(abi.SizeofIbUverbsIoctlHdr + abi.SizeofIbUverbsAttr*int(c.Hdr.NumAttrs))
	return ioctl.Ioctl(fd, unsafe.Pointer(c))
}

// InvokeRaw is Invoke for a command the kernel completes without sleeping (arming a CQ, say): the system call
// is made without telling Go's scheduler, which saves the scheduler's entry and exit work on every call (a few
// hundred instructions, the cost that matters on a per-message path). A command that can block — one that waits
// for a resource, a lock held across I/O, or memory reclaim beyond a small allocation — must use Invoke, or it
// holds its P and stops other goroutines from running meanwhile.
func (c *Cmd) InvokeRaw(fd int) error {
	if c.err != nil {
		return c.err
	}
	c.Hdr.Length = uint16(abi.SizeofIbUverbsIoctlHdr + abi.SizeofIbUverbsAttr*int(c.Hdr.NumAttrs))
	return ioctl.IoctlRaw(fd, unsafe.Pointer(c))
}

// Describe lists the command's attributes as "id:len:flags:data", comma-separated, in order, with "out" in
// place of the data of the attributes whose ids are in outs (a new object's handle, an output pointer: an
// address, or what the kernel writes there). It is the form in which the libmlx5 harness
// (providers/mlx5/internal/cmd/libmlx5emu) dumps libibverbs' ioctls, for tests that compare commands.
func (c *Cmd) Describe(outs ...uint16) string {
	var b strings.Builder
	for i := range int(c.Hdr.NumAttrs) {
		a := &c.Attrs[i]
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d:%d:%d:", a.AttrId, a.Len, a.Flags)
		if slices.Contains(outs, a.AttrId) {
			b.WriteString("out")
		} else {
			fmt.Fprintf(&b, "%d", a.Data)
		}
	}
	return b.String()
}
