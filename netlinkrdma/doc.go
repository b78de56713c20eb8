// Package netlinkrdma is a client for RDMA netlink (NETLINK_RDMA, client
// RDMA_NL_NLDEV), the kernel interface behind iproute2's rdma tool and
// libibverbs' device discovery. It runs on vishvananda/netlink's nl socket
// layer and decodes replies into typed Go values.
//
// # Coverage
//
//   - devices: list, get, rename, move to a netns, adaptive moderation
//     (RDMA_NLDEV_CMD_GET, RDMA_NLDEV_CMD_SET);
//   - ports: state, physical state, netdev, IB LID/SM LID/LMC/subnet prefix
//     (RDMA_NLDEV_CMD_PORT_GET);
//   - software devices: rxe and siw links (RDMA_NLDEV_CMD_NEWLINK/DELLINK);
//   - sub-devices (SMI): add, delete (RDMA_NLDEV_CMD_NEWDEV/DELDEV, 6.11+);
//   - system settings: netns mode, copy-on-fork, privileged Q_Keys, monitor
//     mode (RDMA_NLDEV_CMD_SYS_GET/SET);
//   - device events: NewMonitor (RDMA_NL_GROUP_NOTIFY, 6.12+);
//   - character devices: /dev/infiniband/uverbsN etc. with driver id and
//     ABI (RDMA_NLDEV_CMD_GET_CHARDEV);
//   - resources and statistics (RDMA_NLDEV_CMD_RES_*, RDMA_NLDEV_CMD_STAT_*),
//     with the limits of Linux 7.3's resource summary and the raw SRQ dump;
//   - kernel FRMR pools: list, aging, pinned counts
//     (RDMA_NLDEV_CMD_FRMR_POOLS_GET/SET, 7.1+).
//
// Each method's doc names the rdma command it is equivalent to. A kernel
// without a command answers with an error matching ErrNotSupported or
// unix.EINVAL; a setting it does not report is absent from Present (6.1
// reports no monitor mode, and Debian's 6.1 from 6.1.190 on reports the
// privileged-qkey mode).
//
// Replies are decoded into typed values (GUID prints as iproute2 does, enums
// have iproute2's names). Each value records the attributes the kernel sent
// in its Present set, so a caller can tell "absent" from "zero" exactly as
// iproute2 does. Unknown attributes from newer kernels are ignored; a
// malformed reply is an error naming the first bad attribute.
//
// # Errors
//
// Failed requests return *OpError, which names the operation and object and
// unwraps to the kernel's errno: errors.Is(err, unix.EPERM) works, and
// errors.Is(err, ErrNotSupported) matches EOPNOTSUPP / EPROTONOSUPPORT.
//
// # Namespaces
//
// The kernel answers for the network namespace the socket was opened in;
// DialNetNS opens one in another namespace.
package netlinkrdma
