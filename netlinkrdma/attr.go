package netlinkrdma

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// attrDecoder walks a run of netlink attributes (struct nlattr TLVs). It has a
// sticky error in the style of bufio.Scanner: the first malformed attribute or
// wrongly sized value is recorded, Next returns false from then on, and Err
// reports that first error. Nested decoders report into their parent, so one
// Err call at the end of a decode covers the whole tree.
//
// RDMA netlink values are in host byte order (the kernel uses nla_put_u32 /
// nla_put_u64_64bit); a value flagged NLA_F_NET_BYTEORDER is read big-endian.
type attrDecoder struct {
	b      []byte
	typ    uint16 // type of the current attribute, flags masked off
	netOrd bool   // NLA_F_NET_BYTEORDER was set on the current attribute
	val    []byte
	err    error
	parent *attrDecoder
}

func newAttrDecoder(b []byte) *attrDecoder { return &attrDecoder{b: b} }

// Next advances to the next attribute. It returns false at the end of the
// buffer or after an error.
func (d *attrDecoder) Next() bool {
	if d.err != nil || len(d.b) == 0 {
		return false
	}
	if len(d.b) < unix.SizeofNlAttr {
		d.fail(fmt.Errorf("netlinkrdma: %d trailing bytes after last attribute", len(d.b)))
		return false
	}
	l := int(binary.NativeEndian.Uint16(d.b[0:2]))
	t := binary.NativeEndian.Uint16(d.b[2:4])
	if l < unix.SizeofNlAttr || l > len(d.b) {
		d.fail(fmt.Errorf("netlinkrdma: attribute %d has length %d with %d bytes left", t&nl.NLA_TYPE_MASK, l, len(d.b)))
		return false
	}
	d.typ = t & nl.NLA_TYPE_MASK
	d.netOrd = t&unix.NLA_F_NET_BYTEORDER != 0
	d.val = d.b[unix.SizeofNlAttr:l]
	adv := nlaAlign(l)
	if adv > len(d.b) {
		adv = len(d.b) // the last attribute may omit its padding
	}
	d.b = d.b[adv:]
	return true
}

func nlaAlign(l int) int { return (l + unix.NLA_ALIGNTO - 1) &^ (unix.NLA_ALIGNTO - 1) }

// Type is the current attribute's type with NLA_F_NESTED and
// NLA_F_NET_BYTEORDER masked off.
func (d *attrDecoder) Type() uint16 { return d.typ }

// Err returns the first error met by this decoder or any nested decoder.
func (d *attrDecoder) Err() error { return d.err }

func (d *attrDecoder) fail(err error) {
	for p := d; p != nil; p = p.parent {
		if p.err == nil {
			p.err = err
		}
	}
}

func (d *attrDecoder) sizeErr(want int) {
	d.fail(fmt.Errorf("netlinkrdma: attribute %d: want %d bytes, got %d", d.typ, want, len(d.val)))
}

// Uint8 decodes the current attribute as a u8.
func (d *attrDecoder) Uint8() uint8 {
	if len(d.val) != 1 {
		d.sizeErr(1)
		return 0
	}
	return d.val[0]
}

// Uint32 decodes the current attribute as a u32.
func (d *attrDecoder) Uint32() uint32 {
	if len(d.val) != 4 {
		d.sizeErr(4)
		return 0
	}
	if d.netOrd {
		return binary.BigEndian.Uint32(d.val)
	}
	return binary.NativeEndian.Uint32(d.val)
}

// Uint64 decodes the current attribute as a u64.
func (d *attrDecoder) Uint64() uint64 {
	if len(d.val) != 8 {
		d.sizeErr(8)
		return 0
	}
	if d.netOrd {
		return binary.BigEndian.Uint64(d.val)
	}
	return binary.NativeEndian.Uint64(d.val)
}

// String decodes the current attribute as a string; the kernel sends
// NUL-terminated strings, and everything from the first NUL on is dropped.
func (d *attrDecoder) String() string {
	return unix.ByteSliceToString(d.val)
}

// Bytes returns a copy of the current attribute's payload.
func (d *attrDecoder) Bytes() []byte {
	return append([]byte(nil), d.val...)
}

// Nested runs fn over the attributes nested in the current one. Errors inside
// fn's decoder become this decoder's error.
func (d *attrDecoder) Nested(fn func(nd *attrDecoder)) {
	nd := &attrDecoder{b: d.val, parent: d}
	fn(nd)
}

// attrEncoder builds a run of attributes for a request, with the alignment
// rules of vishvananda/netlink's nl.RtAttr (the same as struct nlattr).
type attrEncoder struct {
	b []byte
}

func (e *attrEncoder) bytes(typ uint16, v []byte) {
	e.b = append(e.b, nl.NewRtAttr(int(typ), v).Serialize()...)
}

func (e *attrEncoder) Uint8(typ uint16, v uint8)   { e.bytes(typ, nl.Uint8Attr(v)) }
func (e *attrEncoder) Uint32(typ uint16, v uint32) { e.bytes(typ, nl.Uint32Attr(v)) }
func (e *attrEncoder) Uint64(typ uint16, v uint64) { e.bytes(typ, nl.Uint64Attr(v)) }

// String encodes a NUL-terminated string (the kernel's NLA_NUL_STRING).
func (e *attrEncoder) String(typ uint16, s string) { e.bytes(typ, nl.ZeroTerminated(s)) }

// Encode returns the encoded attributes.
func (e *attrEncoder) Encode() []byte { return e.b }

// Nested encodes the attributes that fn adds as one NLA_F_NESTED attribute.
func (e *attrEncoder) Nested(typ uint16, fn func(ne *attrEncoder)) {
	var ne attrEncoder
	fn(&ne)
	e.bytes(typ|unix.NLA_F_NESTED, ne.b)
}
