package pingpong

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/goverbs/goverbs/uverbs"
)

// dest is one side's connection data as the pingpong tools exchange it.
type dest struct {
	lid int
	qpn int
	psn int
	gid uverbs.GID
}

// msgSize is sizeof "0000:000000:000000:00000000000000000000000000000000": the record, NUL included, that
// rdma-core's pingpong tools send whole.
const msgSize = 52

// wireGID renders a GID as the tools put it on the wire: four %08x words, each the big-endian reading of four
// raw GID bytes (rdma-core's gid_to_wire_gid).
func wireGID(g uverbs.GID) string {
	var sb strings.Builder
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&sb, "%08x", binary.BigEndian.Uint32(g[i*4:]))
	}
	return sb.String()
}

// parseWireGID is the inverse (rdma-core's wire_gid_to_gid): each 8-hex-digit word scanned with %x; a word that
// does not scan leaves zeros, as sscanf would leave the variable untouched.
func parseWireGID(s string) uverbs.GID {
	var g uverbs.GID
	for i := 0; i < 4; i++ {
		if len(s) < (i+1)*8 {
			break
		}
		v, ok := scanHex(s[i*8 : i*8+8])
		if !ok {
			continue
		}
		binary.BigEndian.PutUint32(g[i*4:], uint32(v))
	}
	return g
}

// encode renders d as the 52-byte record ("%04x:%06x:%06x:%s" and a NUL).
func (d dest) encode() []byte {
	msg := make([]byte, msgSize)
	s := fmt.Sprintf("%04x:%06x:%06x:%s", d.lid, d.qpn, d.psn, wireGID(d.gid))
	copy(msg, s)
	return msg
}

// decodeDest parses a record the way the C tools' sscanf("%x:%x:%x:%s") does: fields that do not scan stay 0.
func decodeDest(msg []byte) dest {
	s := string(msg)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	var d dest
	parts := strings.SplitN(s, ":", 4)
	vals := []*int{&d.lid, &d.qpn, &d.psn}
	for i, p := range parts {
		if i < 3 {
			v, ok := scanHex(p)
			if !ok {
				return d
			}
			*vals[i] = int(int32(uint32(v)))
			continue
		}
		gid := strings.TrimLeft(p, " \t\n")
		if j := strings.IndexAny(gid, " \t\n"); j >= 0 {
			gid = gid[:j]
		}
		d.gid = parseWireGID(gid)
	}
	return d
}

// scanHex reads a leading hexadecimal number as scanf's %x does (optional sign, optional 0x, then digits,
// stopping at the first non-digit); false when no digit is found.
func scanHex(s string) (uint64, bool) {
	s = strings.TrimLeft(s, " \t\n")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isHex(s[2]) {
		s = s[2:]
	}
	n := 0
	for n < len(s) && isHex(s[n]) {
		n++
	}
	if n == 0 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:n], 16, 64)
	if err != nil {
		v = ^uint64(0)
	}
	if neg {
		v = -v
	}
	return v, true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
