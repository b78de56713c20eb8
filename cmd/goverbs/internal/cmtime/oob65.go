package cmtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
)

// The out-of-band messages of rdma-core 65's cmtime, between its controller (the OOB root) and the other
// peers (leaves), over plain TCP:
//
//   - peer info, struct peer_info as the C tool sends it raw (x86-64/arm64 Linux layout, 136 bytes): a
//     struct sockaddr_storage (128 bytes: sa_family in host byte order, which is little-endian on the
//     platforms goverbs runs on, then sin_port in network order and the address as in sockaddr_in or
//     sockaddr_in6; all zero for a connecting peer), the role as a 4-byte host-order enum (0 connect, 1
//     listen) and 4 bytes of padding. Each leaf sends its own; the root gathers them in the order it
//     accepted the leaves after its own (entry 0) and sends the whole array of -P entries to every leaf.
//   - sync: one byte, the step (0, then 7 "init qp", 12 "cm connect", 14 "disconnect" per test round). A leaf
//     sends it and waits for the root's; the root reads one from every leaf, then sends it to each.
const (
	peerInfoSize = 136
	sockaddrSize = 128
	afInet       = 2
	afInet6      = 10

	roleConnect = 0
	roleListen  = 1
)

// peerInfo is one struct peer_info: the raw sockaddr_storage and the role.
type peerInfo struct {
	SA   [sockaddrSize]byte
	Role int32
}

// peerInfoFor is the peer_info of a listener at ap (or, with an invalid ap, the zero address of a connecting peer).
func peerInfoFor(ap netip.AddrPort, role int32) peerInfo {
	p := peerInfo{Role: role}
	switch {
	case !ap.IsValid():
	case ap.Addr().Is4() || ap.Addr().Is4In6():
		binary.LittleEndian.PutUint16(p.SA[0:], afInet)
		binary.BigEndian.PutUint16(p.SA[2:], ap.Port())
		a := ap.Addr().Unmap().As4()
		copy(p.SA[4:8], a[:])
	default:
		binary.LittleEndian.PutUint16(p.SA[0:], afInet6)
		binary.BigEndian.PutUint16(p.SA[2:], ap.Port())
		a := ap.Addr().As16()
		copy(p.SA[8:24], a[:])
		if z := ap.Addr().Zone(); z != "" {
			if n, err := strconv.ParseUint(z, 10, 32); err == nil {
				binary.LittleEndian.PutUint32(p.SA[24:], uint32(n))
			}
		}
	}
	return p
}

// AddrPort is the address the peer listens on; invalid for any family but AF_INET and AF_INET6.
func (p *peerInfo) AddrPort() netip.AddrPort {
	port := binary.BigEndian.Uint16(p.SA[2:])
	switch binary.LittleEndian.Uint16(p.SA[0:]) {
	case afInet:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(p.SA[4:8])), port)
	case afInet6:
		a := netip.AddrFrom16([16]byte(p.SA[8:24]))
		if scope := binary.LittleEndian.Uint32(p.SA[24:]); scope != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// encodePeers is the bytes of the peer_info array (padding zero).
func encodePeers(ps []peerInfo) []byte {
	b := make([]byte, len(ps)*peerInfoSize)
	for i := range ps {
		o := b[i*peerInfoSize:]
		copy(o, ps[i].SA[:])
		binary.LittleEndian.PutUint32(o[sockaddrSize:], uint32(ps[i].Role))
	}
	return b
}

var errPeerInfoSize = errors.New("peer info: length is not a multiple of 136 bytes")

// decodePeers is the peer_info array in b (the padding is ignored, as C ignores it).
func decodePeers(b []byte) ([]peerInfo, error) {
	if len(b)%peerInfoSize != 0 {
		return nil, fmt.Errorf("%w (%d)", errPeerInfoSize, len(b))
	}
	ps := make([]peerInfo, len(b)/peerInfoSize)
	for i := range ps {
		o := b[i*peerInfoSize:]
		copy(ps[i].SA[:], o[:sockaddrSize])
		ps[i].Role = int32(binary.LittleEndian.Uint32(o[sockaddrSize:]))
	}
	return ps, nil
}
