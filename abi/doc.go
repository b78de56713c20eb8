// Package abi is the Linux RDMA user ABI as Go types and constants,
// generated from the kernel's uAPI headers (<rdma/*.h>, Debian package
// linux-libc-dev; the committed files come from the 6.1 headers).
//
// It covers the uverbs ioctl and write() command ABI (rdma_user_ioctl_cmds.h,
// ib_user_ioctl_cmds.h, ib_user_ioctl_verbs.h, ib_user_verbs.h), RDMA
// netlink (rdma_netlink.h), and the rxe, siw and mlx5 driver ABIs
// (rdma_user_rxe.h, siw-abi.h, mlx5-abi.h, mlx5_user_ioctl_cmds.h,
// mlx5_user_ioctl_verbs.h). Each header becomes one file
// z<header>_linux.go, so a file can be read side by side with its header.
//
// # Naming
//
//   - Constants keep their C names and values exactly: UVERBS_METHOD_INVOKE_WRITE,
//     IB_USER_VERBS_CMD_POST_SEND, RDMA_NLDEV_ATTR_DEV_NAME, RDMA_VERBS_IOCTL.
//     Values, including ioctl numbers, are computed by the C compiler.
//   - struct x_y_z becomes type XYZ with each '_'-separated word capitalised
//     (struct ib_uverbs_ioctl_hdr -> IbUverbsIoctlHdr, struct mminfo -> Mminfo);
//     fields follow the same rule (object_id -> ObjectId).
//   - A member declared with an anonymous struct type gets the type
//     <Parent><Member> (ib_uverbs_odp_caps.per_transport_caps ->
//     IbUverbsOdpCapsPerTransportCaps).
//   - SizeofXxx is sizeof(struct xxx) as computed by the C compiler.
//   - Derived names never silently replace one another: a clash (two fields
//     with one Go name, or a derived type name equal to another type's) stops
//     the generator or fails to compile, and would need an explicit rule in
//     internal/cmd/genabi/config.go.
//   - Function-like macros are not generated; RDMA_NL_GET_TYPE, _CLIENT and
//     _OP are available as RdmaNlGetType, RdmaNlGetClient and RdmaNlGetOp.
//
// Constants are untyped and carry C's value, including its sign:
// RDMA_NLA_TYPE_MASK is ~(NLA_F_NESTED|NLA_F_NET_BYTEORDER|RDMA_NLA_F_MANDATORY)
// in C's int, i.e. -0xe001, so use it as uint16(RDMA_NLA_TYPE_MASK & 0xffff)
// or clear the flag bits with &^ instead.
//
// # Layout
//
// Every struct starts with a structs.HostLayout field and has exactly the C
// size (each file contains a compile-time check, so building for another
// architecture proves the layout there too). Padding inserted by the C
// compiler and C members that are only padding (pad, pad_1, padding) are
// blank (_) fields. Named C unions are byte arrays of the union's size, an
// anonymous union is rendered as its first member; members that callers
// need are reached through accessor methods returning typed pointers into
// the union (for example (*RxeSendWr).Ud, (*IbUverbsAttr).EnumData). Flexible
// array members are omitted; the data starts at offset SizeofXxx. Each
// type's doc comment states which of these applies.
//
// The structs use fixed-width __u*/__be* types and __aligned_u64, so the
// layout is the same on every 64-bit Linux architecture; 32-bit targets are
// not supported (see layout.go). Fields typed __be* in C hold big-endian
// values; the Go field type does not show it.
//
// # Regenerating
//
// go generate ./abi reruns internal/cmd/genabi (it needs gcc and
// linux-libc-dev); see internal/cmd/genabi/README.md. A test in that package
// proves that the committed files are what the generator produces.
package abi

//go:generate go run ../internal/cmd/genabi
