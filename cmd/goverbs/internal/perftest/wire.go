package perftest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/cstd"
)

// Version is the perftest version goverbs prints (-V) and advertises: Debian trixie's and sid's perftest
// 25.01.0+0.80 is 6.24. The exchange is the same from 5.70 (the oldest version 6.24 talks to) to 6.27, so 6.06
// (Debian 12) peers work as well; a version below 6.28 keeps the parameter negotiation of newer perftests out
// of the exchange.
const Version = "6.24"

// versionSize is the size of the version record (MAX_VERSION in perftest).
const versionSize = 16

// Key record sizes (KEY_MSG_SIZE and KEY_MSG_SIZE_GID), NUL included.
const (
	keyMsgSize    = 59
	keyMsgSizeGID = 108
)

// Dest is one side's per-QP connection data (struct pingpong_dest's wire part).
type Dest struct {
	LID      uint16
	OutReads int
	QPN      uint32
	PSN      uint32
	RKey     uint32
	VAddr    uint64
	SRQN     uint32
	GID      [16]byte
}

// EncodeKey renders d as the fixed-size key record: without GID ("%04x:%04x:%06x:%06x:%08x:%016llx:%08x", 59
// bytes with the NUL) when withGID is false, else with 16 "%02x:" GID bytes before the SRQ number and a
// trailing ':' (108 bytes).
func EncodeKey(d *Dest, withGID bool) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "%04x:%04x:%06x:%06x:%08x:%016x:", d.LID, uint32(d.OutReads), d.QPN, d.PSN, d.RKey, d.VAddr)
	size := keyMsgSize
	if withGID {
		for _, g := range d.GID {
			fmt.Fprintf(&b, "%02x:", g)
		}
		fmt.Fprintf(&b, "%08x:", d.SRQN)
		size = keyMsgSizeGID
	} else {
		fmt.Fprintf(&b, "%08x", d.SRQN)
	}
	msg := make([]byte, size)
	copy(msg[:size-1], b.String()) // a value wider than its field is cut, as sprintf into the C buffer would overflow
	return msg
}

// ErrBadKey is returned for a key record that does not parse.
var ErrBadKey = errors.New("malformed key record")

// DecodeKey parses a key record of either size (as ethernet_read_keys does: hex fields separated by ':').
func DecodeKey(msg []byte, withGID bool) (Dest, error) {
	var d Dest
	if i := strings.IndexByte(string(msg), 0); i >= 0 {
		msg = msg[:i]
	}
	f := strings.Split(string(msg), ":")
	want := 7
	if withGID {
		want = 6 + 16 + 1
	}
	if len(f) < want {
		return d, fmt.Errorf("%w: %d fields in %q, want %d", ErrBadKey, len(f), msg, want)
	}
	var vals [23]uint64
	for i := 0; i < want; i++ {
		v, err := strconv.ParseUint(f[i], 16, 64)
		if err != nil || f[i] == "" {
			return d, fmt.Errorf("%w: field %d %q", ErrBadKey, i, f[i])
		}
		vals[i] = v
	}
	// Each value must fit the width its field has in the record (LID and outstanding reads 4 hex digits, QP
	// and packet sequence numbers 6, the rkey 8): a C peer's sprintf never writes more, and a wider value
	// could not be sent back in a record of the fixed size.
	for i, max := range [...]uint64{0xffff, 0xffff, 0xffffff, 0xffffff, math.MaxUint32} {
		if vals[i] > max {
			return d, fmt.Errorf("%w: %s %#x does not fit its field (at most %#x) in %q", ErrBadKey,
				[...]string{"LID", "outstanding reads", "QP number", "PSN", "rkey"}[i], vals[i], max, msg)
		}
	}
	d.LID, d.OutReads, d.QPN, d.PSN, d.RKey, d.VAddr = uint16(vals[0]), int(vals[1]), uint32(vals[2]), uint32(vals[3]), uint32(vals[4]), vals[5]
	if withGID {
		for i := 0; i < 16; i++ {
			if vals[6+i] > 0xff {
				return d, fmt.Errorf("%w: GID byte %q", ErrBadKey, f[6+i])
			}
			d.GID[i] = byte(vals[6+i])
		}
		if vals[22] > math.MaxUint32 {
			return d, fmt.Errorf("%w: SRQ number %q", ErrBadKey, f[22])
		}
		d.SRQN = uint32(vals[22])
	} else {
		if vals[6] > math.MaxUint32 {
			return d, fmt.Errorf("%w: SRQ number %q", ErrBadKey, f[6])
		}
		d.SRQN = uint32(vals[6])
	}
	return d, nil
}

// BWReport is the bandwidth report the sides swap (struct bw_report_data's exchanged part).
type BWReport struct {
	Size        uint64
	Iters       uint64
	BWPeak      float64
	BWAvg       float64
	MsgRateAvg  float64
	BWAvgP1     float64
	BWAvgP2     float64
	MsgRateP1   float64
	MsgRateP2   float64
	hasPerPorts bool
}

// Conn is the out-of-band TCP connection. In every exchange the client writes then reads and the server reads
// then writes, so a goverbs side pairs with a C side either way.
type Conn struct {
	RW     io.ReadWriter
	Client bool
	// RDMACM is the -z channel: keys travel as the binary struct pingpong_dest (with GIDIndex, the sender's
	// GID index) and there is no final "done".
	RDMACM   bool
	GIDIndex int
	// WideDest is set for a peer of perftest 6.29 or later on the -z channel: its struct pingpong_dest has
	// tail_markers_vaddr after vaddr (64 bytes, not 56), and it sends the larger record to every peer, so
	// 6.29 and older releases no longer pair over rdma_cm. goverbs sends each peer the layout it reads.
	WideDest bool
	// Stderr, if set, receives what perftest's ctx_xchg_data_ethernet prints when a data exchange (versions,
	// page size, MTU, reports) fails on the TCP channel.
	Stderr io.Writer
}

// xchgData is Exchange for the records perftest swaps with ctx_xchg_data (everything but the QP keys): on the
// TCP channel a failure prints C's lines — ethernet_write_data's perror("client write") and "Couldn't send
// reports", or ethernet_read_data's "Couldn't read reports" — and ctx_xchg_data_ethernet's own, whose wording
// differs by side and step as in C.
func (c *Conn) xchgData(mine, theirs []byte) error {
	err := c.Exchange(mine, theirs)
	if err == nil || c.Stderr == nil || c.RDMACM {
		return err
	}
	w := c.Stderr
	var ew *exchangeWriteError
	if errors.As(err, &ew) {
		fmt.Fprintf(w, "client write: %s\n", cstd.Strerror(cstd.ErrnoOf(ew.err, unix.EPIPE)))
		fmt.Fprintf(w, "Couldn't send reports\n")
		if c.Client {
			fmt.Fprintf(w, " Unable to write to socket/rdma_cm\n")
		} else {
			fmt.Fprintf(w, " Unable to write from socket/rdma_cm\n")
		}
		return err
	}
	fmt.Fprintf(w, "ethernet_read_data: Couldn't read reports\n")
	if c.Client {
		fmt.Fprintf(w, " Unable to read from socket/rdma_cm\n")
	} else {
		fmt.Fprintf(w, " Unable to read to socket/rdma_cm\n")
	}
	return err
}

// exchangeWriteError marks an Exchange that failed sending (as opposed to receiving).
type exchangeWriteError struct{ err error }

func (e *exchangeWriteError) Error() string { return e.err.Error() }
func (e *exchangeWriteError) Unwrap() error { return e.err }

// Exchange sends mine and receives the peer's record of the same size.
func (c *Conn) Exchange(mine, theirs []byte) error {
	if c.Client {
		if _, err := c.RW.Write(mine); err != nil {
			return fmt.Errorf("send %d bytes: %w", len(mine), &exchangeWriteError{err})
		}
		if _, err := io.ReadFull(c.RW, theirs); err != nil {
			return fmt.Errorf("receive %d bytes: %w", len(theirs), err)
		}
		return nil
	}
	if _, err := io.ReadFull(c.RW, theirs); err != nil {
		return fmt.Errorf("receive %d bytes: %w", len(theirs), err)
	}
	if _, err := c.RW.Write(mine); err != nil {
		return fmt.Errorf("send %d bytes: %w", len(mine), &exchangeWriteError{err})
	}
	return nil
}

// Versions swaps the 16-byte NUL-padded version strings and returns the peer's.
func (c *Conn) Versions(mine string) (string, error) {
	var m, t [versionSize]byte
	copy(m[:versionSize-1], mine)
	if err := c.xchgData(m[:], t[:]); err != nil {
		return "", fmt.Errorf("exchange versions: %w", err)
	}
	s := string(t[:])
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	return s, nil
}

// SysData swaps the cycle buffer (page size) and cache line size as big-endian 32-bit ints and returns the
// peer's values.
func (c *Conn) SysData(cycleBuffer, cacheLine int) (int, int, error) {
	var m, t [4]byte
	binary.BigEndian.PutUint32(m[:], uint32(int32(cycleBuffer)))
	if err := c.xchgData(m[:], t[:]); err != nil {
		return 0, 0, fmt.Errorf("exchange page size: %w", err)
	}
	rcb := int(int32(binary.BigEndian.Uint32(t[:])))
	binary.BigEndian.PutUint32(m[:], uint32(int32(cacheLine)))
	if err := c.xchgData(m[:], t[:]); err != nil {
		return 0, 0, fmt.Errorf("exchange cache line size: %w", err)
	}
	return rcb, int(int32(binary.BigEndian.Uint32(t[:]))), nil
}

// MTU swaps the MTU enum value (1..5) as an ASCII number in 2 bytes (the peer is at least 5.31) and returns
// the peer's value (0 if it does not parse).
func (c *Conn) MTU(mtu int) (int, error) {
	m := make([]byte, 2)
	t := make([]byte, 2)
	copy(m, strconv.Itoa(mtu))
	if err := c.xchgData(m, t); err != nil {
		return 0, fmt.Errorf("exchange MTU: %w", err)
	}
	return cAtoi(t), nil
}

// cAtoi parses a leading decimal number like strtol(s, NULL, 10).
func cAtoi(b []byte) int {
	n, i, neg := 0, 0, false
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n') {
		i++
	}
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		n = n*10 + int(b[i]-'0')
	}
	if neg {
		return -n
	}
	return n
}

// Atof parses a version string the way C's atof does (leading number, rest ignored; 0 if none).
func Atof(s string) float64 {
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == '.') {
		end++
	}
	for end > 0 {
		if v, err := strconv.ParseFloat(s[:end], 64); err == nil {
			return v
		}
		end--
	}
	return 0
}

// Keys swaps one per-QP key record.
func (c *Conn) Keys(mine *Dest, withGID bool) (Dest, error) {
	if c.RDMACM {
		t := make([]byte, destLen(c.WideDest))
		if err := c.Exchange(encodeDest(mine, c.GIDIndex, c.WideDest), t); err != nil {
			return Dest{}, fmt.Errorf("exchange QP keys: %w", err)
		}
		return decodeDest(t, c.WideDest), nil
	}
	m := EncodeKey(mine, withGID)
	t := make([]byte, len(m))
	if err := c.Exchange(m, t); err != nil {
		return Dest{}, fmt.Errorf("exchange QP keys: %w", err)
	}
	return DecodeKey(t, withGID)
}

// BWReports swaps the bandwidth reports (xchg_bw_reports; the peer is at least 5.33, so iterations travel as
// 64-bit). perPort adds the per-port fields.
func (c *Conn) BWReports(mine *BWReport, perPort bool) (BWReport, error) {
	var r BWReport
	u64 := func(v uint64, out *uint64) error {
		var m, t [8]byte
		binary.BigEndian.PutUint64(m[:], v)
		if err := c.xchgData(m[:], t[:]); err != nil {
			return fmt.Errorf("exchange reports: %w", err)
		}
		*out = binary.BigEndian.Uint64(t[:])
		return nil
	}
	f64 := func(v float64, out *float64) error {
		var o uint64
		if err := u64(math.Float64bits(v), &o); err != nil {
			return err
		}
		*out = math.Float64frombits(o)
		return nil
	}
	steps := []func() error{
		func() error { return u64(mine.Size, &r.Size) },
		func() error { return u64(mine.Iters, &r.Iters) },
		func() error { return f64(mine.BWPeak, &r.BWPeak) },
		func() error { return f64(mine.BWAvg, &r.BWAvg) },
		func() error { return f64(mine.MsgRateAvg, &r.MsgRateAvg) },
	}
	if perPort {
		steps = append(steps,
			func() error { return f64(mine.BWAvgP1, &r.BWAvgP1) },
			func() error { return f64(mine.MsgRateP1, &r.MsgRateP1) },
			func() error { return f64(mine.BWAvgP2, &r.BWAvgP2) },
			func() error { return f64(mine.MsgRateP2, &r.MsgRateP2) })
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// Done is the final record ctx_close_connection writes after its last key exchange ("done" with its NUL).
// Both sides write it; neither reads it.
func (c *Conn) Done() error {
	if c.RDMACM {
		return nil // ctx_close_connection ends with the handshake on rdma_cm
	}
	if _, err := c.RW.Write([]byte("done\x00")); err != nil {
		return fmt.Errorf("send done: %w", err)
	}
	return nil
}
