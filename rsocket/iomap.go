package rsocket

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"runtime"
	"time"

	"github.com/goverbs/goverbs/mmio"
	"github.com/goverbs/goverbs/uverbs"
	"golang.org/x/sys/unix"
)

// Errors of the iomap calls (IOMap, IOUnmap, IOWrite), inside an *IOMapError.
var (
	// ErrIOMapFull: the peer's iomap table has no free entry (it offers
	// Options.IOMapSize entries; librdmacm's default is 0). Matches unix.ENOMEM, as riomap.
	ErrIOMapFull = fmt.Errorf("the peer's iomap table has no free entry: %w", unix.ENOMEM)
	// ErrNotMapped: IOWrite to an offset no mapping of the peer covers, or
	// IOUnmap of a buffer that is not mapped. Matches unix.EINVAL.
	ErrNotMapped = fmt.Errorf("not mapped: %w", unix.EINVAL)
)

// IOMapError is an iomap call's own failure (the connection's failures are
// returned as by Write): Len bytes at Offset, and why. It comes wrapped in a
// *net.OpError whose Op is "iomap", "iounmap" or "iowrite".
type IOMapError struct {
	Offset int64
	Len    int
	Err    error
}

func (e *IOMapError) Error() string {
	return fmt.Sprintf("%d bytes at offset %#x: %v", e.Len, e.Offset, e.Err)
}

func (e *IOMapError) Unwrap() error { return e.Err }

// ioMapping is one of our buffers registered for the peer's writes, at
// its index in the peer's iomap table.
type ioMapping struct {
	buf    []byte
	mr     *uverbs.MR
	offset int64
}

// peerOrder is the byte order of what we write into the peer's memory.
func (c *Conn) peerOrder() binary.ByteOrder {
	if c.peerBE {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// IOMap registers buf for remote writes and maps it into the peer's iomap
// table, so that the peer's IOWrite (riowrite) at offsets [off, off+len(buf))
// lands in buf (riomap with PROT_WRITE). offset -1 means the address of
// buf, as riomap; the offset used is returned.
//
// The entry (the 24-byte struct rs_iomap) is sent at once as an IOMAP_SGL
// message, so IOMap may wait for room to send like Write (the write
// deadline applies). The peer learns of the mapping when the entry lands;
// as in riostream, send it a message after IOMap (any Write) and let it
// IOWrite only after reading that message.
//
// buf must stay allocated and unmoved while mapped: memory from
// uverbs.AllocBuffer is the natural choice (a Go slice works too, the
// registration keeps it reachable). The device writes it without the Go
// memory model knowing: see WaitIOByte. The peer offers Options.IOMapSize
// entries (librdmacm's default 0: then ErrIOMapFull).
func (c *Conn) IOMap(buf []byte, offset int64) (int64, error) {
	if len(buf) == 0 || len(buf) > math.MaxUint32 || offset < -1 {
		return -1, c.opErr("iomap", &IOMapError{Offset: offset, Len: len(buf), Err: unix.EINVAL})
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if expired(&c.wdl) {
		return -1, c.opErr("iomap", os.ErrDeadlineExceeded)
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return -1, c.opErr("iomap", net.ErrClosed)
	}
	idx := -1
	for i := range c.maps {
		if c.maps[i].mr == nil {
			idx = i
			break
		}
	}
	c.mu.Unlock()
	if idx < 0 {
		return -1, c.opErr("iomap", &IOMapError{Offset: offset, Len: len(buf), Err: fmt.Errorf("%d entries: %w", len(c.maps), ErrIOMapFull)})
	}
	// IOMap calls are serialized by wmu, and IOUnmap only frees entries: idx stays free.
	mr, err := c.pd.RegMR(buf, uverbs.AccessLocalWrite|uverbs.AccessRemoteWrite)
	if err != nil {
		return -1, c.opErr("iomap", &IOMapError{Offset: offset, Len: len(buf), Err: err})
	}
	if offset == -1 {
		offset = int64(mr.Addr())
	}
	spun := false
	if err := c.lockSendable(&spun); err != nil {
		mr.Close()
		return -1, c.opErr("iomap", err)
	}
	c.maps[idx] = ioMapping{buf: buf, mr: mr, offset: offset}
	putIOMap(c.iomb[:], ioMap{Offset: uint64(offset), SGE: sge{Addr: mr.Addr(), Key: mr.RKey(), Length: uint32(len(buf))}}, c.peerOrder())
	c.sseqNo++ // an IOMAP_SGL message takes a credit (rs_write_iomap)
	err = c.postWrite(c.iomb[:], msg(opIOMapSGL, uint32(idx)), uverbs.WRRDMAWriteWithImm,
		c.remoteIOM.Addr+uint64(idx)*iomapLen, c.remoteIOM.Key)
	if err != nil {
		c.fail(err)
		c.maps[idx] = ioMapping{}
		c.mu.Unlock()
		mr.Close()
		return -1, c.opErr("iomap", err)
	}
	c.mu.Unlock()
	return offset, nil
}

// IOUnmap deregisters a buffer mapped with IOMap (riounmap; buf must be
// the same slice: same start and length). As with librdmacm the peer is not
// told: its entry stays, and an IOWrite of the peer into the range after
// this fails the connection (remote access error), so agree with the peer
// before unmapping. Mappings left are released by Close.
func (c *Conn) IOUnmap(buf []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opErr("iounmap", net.ErrClosed)
	}
	for i := range c.maps {
		m := &c.maps[i]
		if m.mr != nil && len(buf) > 0 && len(m.buf) == len(buf) && &m.buf[0] == &buf[0] {
			mr := m.mr
			*m = ioMapping{}
			if err := mr.Close(); err != nil {
				return c.opErr("iounmap", err)
			}
			return nil
		}
	}
	return c.opErr("iounmap", &IOMapError{Offset: -1, Len: len(buf), Err: ErrNotMapped})
}

// IOWrite writes p into the peer's memory mapped at offset (riowrite): the
// peer mapped a buffer with IOMap (riomap) covering [offset,
// offset+len(p)), and the bytes land there by plain RDMA WRITEs, which the
// peer's Read never sees and nothing on the peer signals. It needs room to
// send like Write (the write deadline applies) and takes no message credit.
// A range not (or no longer) covered by the peer's mappings stops it with
// ErrNotMapped after the bytes that were. It allocates nothing.
//
// Writes on one Conn are in order: a Write after IOWrite reaches the peer
// after the IOWrite's bytes are in place, which is the portable way to tell
// the peer (see WaitIOByte for riostream's polling).
func (c *Conn) IOWrite(p []byte, offset int64) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if expired(&c.wdl) {
		return 0, c.opErr("iowrite", os.ErrDeadlineExceeded)
	}
	if offset < 0 {
		return 0, c.opErr("iowrite", &IOMapError{Offset: offset, Len: len(p), Err: unix.EINVAL})
	}
	done := 0
	olen := olapStart
	spun := false
	for done < len(p) {
		if err := c.lockSendable(&spun); err != nil {
			return done, c.opErr("iowrite", err)
		}
		for done < len(p) && c.canSend() {
			off := uint64(offset) + uint64(done)
			m, ok := findIOMap(c.tl[sglSize*sgeLen:], off)
			if !ok {
				c.mu.Unlock()
				return done, c.opErr("iowrite", &IOMapError{Offset: int64(off), Len: len(p) - done, Err: ErrNotMapped})
			}
			xfer := c.nextXfer(len(p)-done, &olen)
			if room := m.Offset + uint64(m.SGE.Length) - off; uint64(xfer) > room {
				xfer = int(room)
			}
			if err := c.postWrite(p[done:done+xfer], msg(opWrite, uint32(xfer)), uverbs.WRRDMAWrite,
				m.SGE.Addr+(off-m.Offset), m.SGE.Key); err != nil {
				c.fail(err)
				c.mu.Unlock()
				return done, c.opErr("iowrite", err)
			}
			done += xfer
		}
		c.mu.Unlock()
	}
	return done, nil
}

//go:noinline
func loadByte(p *byte) byte { return *p }

// WaitIOByte waits until buf[i] == want, for a buf (or part of one) mapped
// with IOMap that the peer writes with IOWrite: riostream's receiver, which
// polls the last byte of its mapped buffer, done safely. Each check is a
// real load (never hoisted out of the loop), and after the match a
// from-device barrier orders it before the caller's reads of the rest of
// the buffer. It polls for Options.PollTime, then yields, then sleeps in
// short steps; it returns early with the read deadline
// (os.ErrDeadlineExceeded), Close (net.ErrClosed), the connection's error,
// or io.EOF when the peer closed (the byte checked once more first).
//
// As in riostream this relies on the device placing a WRITE's bytes in
// address order, so that the last byte lands last; rxe does, and the
// InfiniBand specification does not promise it within one message. The
// portable alternative is a Write after the IOWrite (see IOWrite).
func (c *Conn) WaitIOByte(buf []byte, i int, want byte) error {
	p := &buf[i]
	start := time.Now()
	for n := 0; ; n++ {
		if loadByte(p) == want {
			mmio.FromDeviceBarrier()
			return nil
		}
		if n&63 != 0 {
			continue
		}
		if err := c.ioWaitState(); err != nil {
			if loadByte(p) == want {
				mmio.FromDeviceBarrier()
				return nil
			}
			return c.opErr("read", err)
		}
		switch spent := time.Since(start); {
		case spent < c.pollTime:
		case spent < c.pollTime+time.Millisecond:
			runtime.Gosched()
		default:
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// ioWaitState is what stops WaitIOByte: the read deadline, Close, a
// failed or closed connection.
func (c *Conn) ioWaitState() error {
	if expired(&c.rdl) {
		return os.ErrDeadlineExceeded
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && !c.tearing {
		c.process() // a failed completion or the peer's DISCONNECT (nothing else polls while we spin)
	}
	switch {
	case c.closed:
		return net.ErrClosed
	case c.err != nil:
		return c.err
	case !c.connected && !c.rx.discReceived && !c.rx.shutReceived:
		return unix.ECONNRESET
	case !c.connected || c.rx.shutReceived:
		return io.EOF
	}
	return nil
}
