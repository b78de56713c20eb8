// Package umad is a pure-Go client of the kernel's user MAD interface
// (/dev/infiniband/umadN, drivers/infiniband/core/user_mad.c): register
// management-class agents on one port, send MADs and receive the replies,
// with the wire layouts of the management datagrams perfquery needs
// (MAD header, PerfMgt ClassPortInfo, PortCounters, PortCountersExtended).
//
// # Devices
//
// Each RDMA port has one umad device; /sys/class/infiniband_mad/umadN/ibdev
// and .../port name it (Devices, Lookup). ABIVersion reads
// /sys/class/infiniband_mad/abi_version; Open refuses kernels whose ABI is
// not 5 (every Linux since 2.6.24).
//
// # Agents and MADs
//
// Port.Register registers an agent (IB_USER_MAD_REGISTER_AGENT2, falling
// back to IB_USER_MAD_REGISTER_AGENT on kernels without it) for a class and
// version; Port.Unregister releases it and Close releases them all with the
// file. Port.Send writes a MAD with its address (Addr: destination QP, Q_Key,
// LID, and on RoCE ports a GRH, since RoCE has no LIDs) and Port.Recv reads
// the next arrival: a reply, or the kernel's report that a request timed out
// (Packet.Status ETIMEDOUT). Port.Call does both and matches the transaction
// ID.
//
// The file descriptor is nonblocking and runs through Go's poller, so Recv
// and Call honour their context's deadline and cancellation without a
// thread blocked in read(2), and Close wakes a blocked Recv.
//
// # RoCE
//
// A RoCE port has no LIDs (rxe's is 0): address MADs by GRH to a GID of
// the destination port, with GIDIndex naming the local GID to send from.
// Use IPv6 GIDs: the kernel's MAD layer matches a reply to its request by
// the GIDs in the receive buffer's GRH, which for RoCE v2 over IPv4 holds
// an IPv4 header, so replies to requests sent to IPv4-mapped GIDs are
// dropped. The first MAD to a link-local GID may fail with ETIMEDOUT while
// the kernel resolves the neighbour. On Linux 7.3.4 rxe answers PerfMgt
// GETs itself but its replies carry no MAD header and never arrive (see
// docs/tool-versions.md, perfquery).
//
// # Errors
//
// Errors are *Error values naming the operation and device; they unwrap to
// a sentinel (ErrNoDevice, ErrABI, ErrTimeout, ErrClosed, ErrMADStatus,
// ErrMalformed) and, when a system call failed, to its errno, so
// errors.Is(err, ErrTimeout) and errors.Is(err, unix.EPERM) both work.
//
// The package is small on purpose: no RMPP, no server agents with method
// masks beyond what Register takes, no SA helpers.
package umad
