// Package rsocket is a pure-Go peer of librdmacm's rsockets: stream sockets
// over RDMA (RC QPs set up with rdma_cm) behind net.Conn and net.Listener,
// wire-compatible with C programs using rsockets (rstream, riostream's stream
// part, rcopy, LD_PRELOAD=librspreload.so applications).
//
//	ln, err := rsocket.Listen("rdma", ":7471")
//	c, err := rsocket.Dial("rdma", "10.233.0.1:7471")
//
// Addresses are as for "tcp"; the host must be an IP of a netdev carrying an
// RDMA device (rdma_cm has no loopback device: 127.0.0.1 does not work).
//
// # Protocol
//
// Connection: rdma_cm in the TCP port space; CONNECT and ACCEPT carry the
// 40-byte struct rs_conn_data (version 1, flags, credits = the receive queue
// size, the target SGL array and the first half of the receive buffer, all
// big-endian). The active side connects with responder resources and initiator
// depth 0, flow control 1, retry and RNR retry 7; the passive side accepts with
// the request's own parameters.
//
// Data: every message is an RDMA WRITE WITH IMM whose 32-bit immediate is
// op<<29 | data. DATA writes the payload into the peer's receive buffer at the
// current target SGE; SGL publishes a free half of our receive buffer into the
// peer's target SGL array and grants message credits (sequence numbers mod
// 2^16); CTRL carries DISCONNECT (Close) and SHUTDOWN (CloseWrite). Receives
// carry no buffers. Four send WQEs are kept for control messages. Sizes and
// defaults are librdmacm's (Options).
//
// # Waiting
//
// A goroutine per connection waits on the completion channel through Go's
// poller (uverbs.CompChannel.GetEvent), polls the CQ and wakes the reader and
// the writer; a blocked Read or Write first polls the CQ itself for
// Options.PollTime. Another goroutine watches the connection's rdma_cm channel
// for DISCONNECTED (a peer that vanishes without the rsockets DISCONNECT gives
// ECONNRESET). Close stops both.
//
// Not implemented: iomap (riomap/riowrite; IOMapSize only reserves the table
// the peer may write), keepalive, datagram rsockets (which do not work on rxe).
package rsocket
