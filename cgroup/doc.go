// Package cgroup manages the Linux RDMA cgroup controller (cgroup v1 and v2):
// it reads and writes per-device limits in rdma.max, reads usage from
// rdma.current, enables the controller in a cgroup v2 parent and moves
// processes into a cgroup. It also defines the error that goverbs returns when
// a verbs call fails because an RDMA cgroup limit was hit.
//
// # Resources and charging
//
// The controller (kernel/cgroup/rdma.c) accounts two resources per device:
//
//   - hca_handle ([HCAHandle]): one per verbs context. Opening
//     /dev/infiniband/uverbsN alone charges nothing; the GET_CONTEXT command
//     (write or ioctl path) charges one before the driver allocates the context
//     and the charge is dropped when the uverbs file is closed.
//   - hca_object ([HCAObject]): one per IDR-type uverbs object: PD, MR
//     (including DM and dma-buf MRs), MW, AH, CQ, QP (including ibv_open_qp),
//     SRQ (including XRC SRQ), XRCD, WQ, RWQ indirection table, flow, flow
//     action, counters, DM and driver objects such as mlx5 DEVX objects, UMEMs,
//     VAR, UAR and packet-pacing entries. File-descriptor objects (completion
//     channel, async event file) and the device object are not charged.
//
// A charge goes to the cgroup of the calling task at allocation time and to
// every ancestor; it fails with EAGAIN if usage+1 would exceed the limit at any
// level. The charge stays with that cgroup if the task later moves. Lowering a
// limit below the current usage is accepted; only later charges fail.
//
// # File formats
//
// rdma.max and rdma.current exist in every non-root cgroup of the hierarchy
// that carries the controller and list every registered RDMA device, whether
// or not a limit was set, one line per device:
//
//	rxe0 hca_handle=max hca_object=10 \n
//
// Each field, including the last, is followed by one space. A limit of
// [Max] (the kernel's S32_MAX) prints as "max". [ParseLimits] and
// [ParseUsage] read that format exactly; [FormatSetting] builds the line that
// a write to rdma.max takes. An unknown device in a write fails with ENODEV.
//
// # Hierarchies
//
// On cgroup v2 the controller must be enabled in the parent's
// cgroup.subtree_control ("+rdma") before a child gets rdma.max;
// [Hierarchy.Create] does that for every ancestor. On cgroup v1 the controller
// has its own hierarchy (mount -t cgroup -o rdma none DIR). A controller is
// bound to one hierarchy at a time: it can be mounted on v1 only while no v2
// cgroup below the root has it enabled. [Find] locates whichever hierarchy
// carries it from /proc/self/mountinfo; [NewHierarchy] points the package at
// any directory, which is how the unit tests use a temporary directory.
//
// # Limit errors
//
// When a verbs create fails with EAGAIN because a limit was hit, goverbs
// returns a [*LimitError] built by [ChargeError]. Both
// errors.Is(err, ErrLimitReached) and errors.Is(err, unix.EAGAIN) hold.
//
// # Kernel quirks (Linux 6.1)
//
//   - rdma.max takes more than it prints: a prefix of "max" (including an
//     empty value) means max, numbers may be octal or hex and carry trailing
//     garbage. This package writes only canonical values.
//   - When the ioctl GET_CONTEXT method (used by rdma-core and goverbs) is
//     refused by hca_handle, the kernel frees the half-made context without
//     dropping the task reference it took (the write() path drops it). The
//     task_struct leaks, and with it the cgroup it ran in stays as a dying
//     cgroup until reboot; the RDMA controller can then no longer move
//     between v1 and v2 hierarchies.
package cgroup
