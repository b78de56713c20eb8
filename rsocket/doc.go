// Package rsocket is a pure-Go peer of librdmacm's rsockets: stream sockets
// over RDMA (RC QPs set up with rdma_cm) behind net.Conn and net.Listener,
// wire-compatible with C programs using rsockets (rstream, riostream, rcopy,
// LD_PRELOAD=librspreload.so applications).
//
//	ln, err := rsocket.Listen("rdma", ":7471")
//	c, err := rsocket.Dial("rdma", "10.233.0.1:7471")
//
// Addresses are as for "tcp"; the host must be an IP of a netdev carrying an
// RDMA device. rdma_cm has no route over loopback: Listen on 127.0.0.1
// succeeds, as librdmacm's rlisten does (the kernel binds the address), but a
// Dial to it fails with ENODEV and says why.
//
// # Errors and limits
//
// Dial's errors are *net.OpError; Timeout() is true when Dialer.Timeout or
// the context's deadline ended it, or the CM timed out. Without a deadline, an
// unreachable address takes librdmacm's address-resolution retries (1+2+...+64
// s, about two minutes), as C does. Sizes in Options are checked before
// anything is allocated: queue depths are clamped to the device (as
// librdmacm), buffers beyond the protocol's 32-bit sizes, the device's
// max_mr_size or the memory the process can pin (RLIMIT_MEMLOCK, the
// system's and the memory cgroup's available memory) are a *LimitError. A
// connection the Listener cannot set up is rejected, logged on
// ListenConfig.ErrorLog, and the Listener goes on.
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
// iWARP (siw) has no immediate data; on an iWARP device (node type RNIC) a
// connection uses librdmacm's message-send mode (RS_OPT_MSG_SEND), as C
// rsockets on that device do: a message with bytes (DATA, SGL publishing a
// half, IOMAP_SGL) is a plain RDMA WRITE followed by a 4-byte inline SEND
// of the message word (in the sender's byte order), a message without (a
// credit alone, CTRL) that SEND alone. Each receive has a 4-byte slot after
// the receive buffer, in its registration, where the word lands. A message
// takes two send WQEs, a credit publishing a half two control slots; inline
// data is at least 4 bytes, and Dial connects with initiator depth 1. An
// accepted iWARP connection sends nothing until the initiator's first
// message has arrived (MPA's rule, which siw's initiator enforces by failing
// the connection; librdmacm does not wait, and C against C met no such
// failure in 15 lab tries): its first credits, data and control messages
// wait for that.
//
// # Waiting
//
// A blocked Read or Write first polls the CQ itself for Options.PollTime.
// Then the first caller to sleep becomes the CQ waiter: it waits for the
// completion channel's event in the kernel (a channel made with
// uverbs.WaitEpoll; librdmacm's rs_get_cq_event), polls
// the CQ and wakes the other side on its wake channel; others sleep on their
// wake channels. A deadline change, Close, keepalive and the CM goroutine
// interrupt the waiter's wait (uverbs.CompChannel.Wake). No goroutine waits on the completion channel for an idle
// connection. One goroutine per connection watches its rdma_cm channel for
// DISCONNECTED (a peer that vanishes without the rsockets DISCONNECT gives
// ECONNRESET). Close stops it.
//
// # iomap
//
// Conn.IOMap (riomap) registers a buffer for remote writes and writes its
// 24-byte struct rs_iomap {offset, addr, rkey, length} into an entry of the
// peer's iomap table (an IOMAP_SGL message: WRITE WITH IMM, op 6 | index, in
// the peer's byte order; it takes a message credit). The peer's IOWrite
// (riowrite) at an offset its table maps issues plain RDMA WRITEs into the
// buffer: no immediate, no receive, no message credit, nothing the
// receiver's Read sees. Options.IOMapSize (RDMA_IOMAPSIZE, default 0) is how
// many entries we offer the peer. The receiver is never told: follow
// IOWrite with a Write, or poll a byte the writer sets last with
// Conn.WaitIOByte (riostream's way). Errors are *IOMapError with the
// sentinels ErrIOMapFull and ErrNotMapped.
//
// # Keepalive
//
// Options.KeepAlive, Conn.SetKeepAlive and Conn.SetKeepAlivePeriod are
// librdmacm's SO_KEEPALIVE and TCP_KEEPIDLE: every period a zero-length
// RDMA WRITE (its wr_id says CTRL KEEPALIVE; addressed at the peer's target
// SGL array, where librdmacm uses address and key 0) is posted while a
// control slot is free. The peer's device acknowledges it. A peer that is
// gone without a word (no DISCONNECT, no DREQ) fails the connection: with
// ETIMEDOUT when probes stay unacknowledged for three periods (rxe retries
// for ever with rsockets' retry count 7, so librdmacm's reliance on the
// probe's completion failing never fires there), or with EIO when the
// probe's completion fails.
//
// # Socket calls
//
// Conn.CloseRead, CloseWrite and Close are rshutdown's SHUT_RD, SHUT_WR and
// SHUT_RDWR; Peek is rrecv's MSG_PEEK; ReadBuffers and WriteBuffers are
// rreadv and rwritev (scatter and gather); Dialer.LocalAddr and LocalPort
// are rbind before rconnect. Options (and Dialer.Route and TOS: RDMA_ROUTE,
// IP_TOS) set what librdmacm's rsetsockopt takes before the connection;
// SocketOptions, SocketError and Route are rgetsockopt's; SetNoDelay,
// SetLinger, SetKeepAlive and SetKeepAlivePeriod its options that may
// change later (SetReadBuffer and SetWriteBuffer answer *OptionError).
//
// ListenConfig.V6Only is IPV6_V6ONLY; SocketOptions also reports TCP_MAXSEG
// and TCP_INFO's state.
//
// Datagram rsockets (SOCK_DGRAM) are refused: ListenPacket answers
// ErrDatagram. librdmacm's cannot run on RoCE or iWARP (see ErrDatagram),
// so there is nothing there to be wire-compatible with.
package rsocket
