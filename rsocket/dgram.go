package rsocket

import (
	"context"
	"net"

	"github.com/goverbs/goverbs/internal/rdmaerr"
)

// ErrDatagram is the refusal of datagram rsockets (librdmacm's rsocket(AF_INET or AF_INET6, SOCK_DGRAM, 0)). It
// matches ErrNotSupported, errors.ErrUnsupported and EOPNOTSUPP.
//
// librdmacm runs a datagram rsocket over UD QPs, one per local address, and gives each QP an address handle
// built from the port's LID with no global route header (rsocket.c, ds_add_qp_dest). InfiniBand routes that;
// the kernel refuses it on a RoCE port (CREATE_AH answers EINVAL: a RoCE address handle must carry a GRH), and
// iWARP has no UD QPs. So rdma-core's own udpong fails between two C peers on rxe — "rconnect: No such file or
// directory" with rdma-core 44 and 65 on every lab kernel, the errno being that of the epoll_ctl(EPOLL_CTL_DEL)
// of librdmacm's clean-up, which overwrites CREATE_AH's EINVAL — and there is nothing on RoCE or iWARP a
// net.PacketConn could be wire-compatible with. On InfiniBand, where librdmacm's datagrams run, goverbs has no
// lab to prove an implementation against, so it offers none rather than one nobody has paired.
var ErrDatagram = rdmaerr.NotSupported("datagram rsockets (SOCK_DGRAM) are not supported: librdmacm addresses their UD QPs by LID without a GRH, which RoCE refuses (and iWARP has no UD QPs)")

// ListenPacket is the counterpart of a datagram rsocket — librdmacm's rsocket(AF_INET or AF_INET6, SOCK_DGRAM,
// 0) followed by rbind or rconnect — and it refuses with ErrDatagram (in a *net.OpError) once network
// ("rdma", "rdma4", "rdma6") and address are valid; see ErrDatagram for why. Stream rsockets (Dial, Listen)
// are unaffected.
func ListenPacket(network, address string) (net.PacketConn, error) {
	ap, err := resolve(context.Background(), network, address)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: network, Err: err}
	}
	return nil, &net.OpError{Op: "listen", Net: network, Addr: &Addr{ap}, Err: ErrDatagram}
}
