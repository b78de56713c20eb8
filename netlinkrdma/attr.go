package netlinkrdma

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/abi"
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

// fixed returns the current attribute's value if it is size bytes long, and
// otherwise records the size error and returns nil.
func (d *attrDecoder) fixed(size int) []byte {
	if len(d.val) != size {
		d.sizeErr(size)
		return nil
	}
	return d.val
}

// order is the byte order of the current attribute's value.
func (d *attrDecoder) order() binary.ByteOrder {
	if d.netOrd {
		return binary.BigEndian
	}
	return binary.NativeEndian
}

// Uint8 decodes the current attribute as a u8.
func (d *attrDecoder) Uint8() uint8 {
	if b := d.fixed(1); b != nil {
		return b[0]
	}
	return 0
}

// Uint32 decodes the current attribute as a u32.
func (d *attrDecoder) Uint32() uint32 {
	if b := d.fixed(4); b != nil {
		return d.order().Uint32(b)
	}
	return 0
}

// Uint64 decodes the current attribute as a u64.
func (d *attrDecoder) Uint64() uint64 {
	if b := d.fixed(8); b != nil {
		return d.order().Uint64(b)
	}
	return 0
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

// each calls fn on every remaining attribute, after adding its type to
// present when present is not nil.
func (d *attrDecoder) each(present *AttrSet, fn func(ad *attrDecoder)) {
	for d.Next() {
		if present != nil {
			present.add(d.Type())
		}
		fn(d)
	}
}

// walk is each over the attributes of b; it returns the first decode error.
func walk(b []byte, present *AttrSet, fn func(ad *attrDecoder)) error {
	ad := newAttrDecoder(b)
	ad.each(present, fn)
	return ad.Err()
}

// entries calls fn with a decoder over each entry of type entry in the table
// nested in the current attribute (entries of other types are skipped). An
// error fn returns for an entry that decoded cleanly (a check of what it
// holds) becomes this decoder's error and ends the walk.
func (d *attrDecoder) entries(entry uint16, fn func(e *attrDecoder) error) {
	d.Nested(func(tbl *attrDecoder) {
		for tbl.Next() {
			if tbl.Type() != entry {
				continue
			}
			var err error
			tbl.Nested(func(e *attrDecoder) { err = fn(e) })
			if err != nil && tbl.Err() == nil {
				tbl.fail(err)
			}
		}
	})
}

// decodeTable decodes the table nested in the current attribute into one T
// per entry of type entry: decode walks the entry's attributes into a new T
// and checks it; an entry that decoded cleanly and passed is appended.
func decodeTable[T any](d *attrDecoder, entry uint16, decode func(v *T, e *attrDecoder) error) []T {
	var out []T
	d.entries(entry, func(e *attrDecoder) error {
		var v T
		err := decode(&v, e)
		if err == nil && e.Err() == nil {
			out = append(out, v)
		}
		return err
	})
	return out
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

// Bool encodes v as a u8 that is 1 or 0, the kernel's on / off settings.
func (e *attrEncoder) Bool(typ uint16, v bool) {
	u := uint8(0)
	if v {
		u = 1
	}
	e.Uint8(typ, u)
}

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

// devAttrs starts a request that names a device.
func devAttrs(devIndex uint32) *attrEncoder {
	e := &attrEncoder{}
	e.Uint32(abi.RDMA_NLDEV_ATTR_DEV_INDEX, devIndex)
	return e
}

// portAttrs starts a request that names a port of a device.
func portAttrs(devIndex, port uint32) *attrEncoder {
	e := devAttrs(devIndex)
	e.Uint32(abi.RDMA_NLDEV_ATTR_PORT_INDEX, port)
	return e
}
