package main

// This file is the generator's allow-list: which headers are turned into
// which Go files, which constant names each contributes, and how C unions are
// exposed. Everything else (values, layouts, sizes) comes from the C compiler.

import "slices"

// headerSpec describes one uAPI header under <include>/rdma.
type headerSpec struct {
	// name is the header's file name, e.g. "ib_user_verbs.h". The Go output
	// is abi/z<base>_linux.go with '-' replaced by '_' (mlx5-abi.h ->
	// zmlx5_abi_linux.go), because hyphens are unusual in Go file names.
	name string
	// prefixes select the enum members and object-like #defines the header
	// contributes; an entry matches a constant that starts with it (so an
	// exact name may be listed too). Every constant the header declares must
	// match a prefix or be listed in skip, otherwise generation fails: a new
	// kernel header can never silently lose a member.
	prefixes []string
	// skip maps a constant name to the reason it is left out.
	skip map[string]string
}

var headers = []headerSpec{
	{name: "rdma_user_ioctl_cmds.h", prefixes: []string{"RDMA_", "UVERBS_"}},
	{name: "ib_user_ioctl_cmds.h", prefixes: []string{"UVERBS_"}},
	{name: "ib_user_ioctl_verbs.h", prefixes: []string{"IB_UVERBS_", "RDMA_"}},
	{name: "ib_user_verbs.h", prefixes: []string{
		"IB_USER_VERBS_", "IB_UVERBS_", "IB_USER_LEGACY_",
		"IB_DEVICE_NAME_MAX", // the only IB_DEVICE_ name; bounds device names in RENAME and netlink
	}},
	{name: "rdma_netlink.h", prefixes: []string{"RDMA_", "IWPM_", "LS_"}},
	{name: "rdma_user_rxe.h", prefixes: []string{"RXE_"}},
	{name: "mlx5-abi.h", prefixes: []string{
		"MLX5_",
		"MPW_RESERVED", // bit 0 of enum mlx5_ib_query_dev_resp_flags' neighbour enum, un-prefixed in C
	}},
	{name: "mlx5_user_ioctl_cmds.h", prefixes: []string{"MLX5_"}},
	{name: "mlx5_user_ioctl_verbs.h", prefixes: []string{"MLX5_"}},
	{name: "siw-abi.h", prefixes: []string{"SIW_"}},
	{name: "ib_user_sa.h", prefixes: []string{"IB_PATH_"}},
	{name: "rdma_user_cm.h", prefixes: []string{
		"RDMA_USER_CM_", "RDMA_MAX_PRIVATE_DATA", "RDMA_PS_", "RDMA_MC_JOIN_FLAG_", "RDMA_OPTION_",
	}},
}

// unionMember exposes one member of a C union as an accessor method on the
// struct that contains the union.
//
// cgo -godefs renders a named union field (union {...} ex;) as a byte array of
// the union's size, and an anonymous union as its first member. Neither lets Go
// code reach the other members, so each member that callers need gets a method
// returning a typed pointer into the union's storage. The pointer is valid
// because the union is stored inside its parent struct, whose Go alignment is
// the alignment of its widest field (checked by the layout tests).
type unionMember struct {
	parent string // C struct tag containing the union
	field  string // Go field holding the union storage (after renaming)
	method string // accessor name
	member string // C member path inside the parent, e.g. "wr.ud"
	// goType is the Go type the accessor points to. Empty means the member is
	// an anonymous C struct: the generator then declares the C typedef
	// "typedef __typeof__(((struct parent *)0)->member) parent_last;" so that
	// cgo -godefs lays it out, and names the Go type CamelCase(parent_last),
	// e.g. rxe_send_wr's wr.ud becomes RxeSendWrUd.
	goType string
	doc    string // completes "X returns a pointer to ..."
}

// exUnion is the ex union {imm_data, invalidate_rkey} that the kernel's and
// rxe's work requests and completions share.
func exUnion(parent string) []unionMember {
	return []unionMember{
		{parent: parent, field: "Ex", method: "ImmData", member: "ex.imm_data", goType: "uint32",
			doc: "the ex union as imm_data (big-endian immediate data)"},
		{parent: parent, field: "Ex", method: "InvalidateRkey", member: "ex.invalidate_rkey", goType: "uint32",
			doc: "the ex union as invalidate_rkey"},
	}
}

// wrUnion is the wr union's rdma and atomic members, the same in the kernel's
// and rxe's send work requests (their ud members differ).
func wrUnion(parent string) []unionMember {
	return []unionMember{
		{parent: parent, field: "Wr", method: "Rdma", member: "wr.rdma",
			doc: "the wr union as rdma (RDMA_WRITE[_WITH_IMM], RDMA_READ)"},
		{parent: parent, field: "Wr", method: "Atomic", member: "wr.atomic",
			doc: "the wr union as atomic (ATOMIC_CMP_AND_SWP, ATOMIC_FETCH_AND_ADD)"},
	}
}

var unions = slices.Concat(
	[]unionMember{
		// struct ib_uverbs_attr (rdma_user_ioctl_cmds.h)
		{parent: "ib_uverbs_attr", field: "AttrData", method: "EnumData", member: "attr_data.enum_data",
			doc: "the attr_data union as enum_data (ENUM_IN attributes: elem_id selects the enum element)"},
		{parent: "ib_uverbs_attr", field: "Data", method: "DataS64", member: "data_s64", goType: "int64",
			doc: "the anonymous data union as data_s64 (the signed view used for FD_IN and FD_OUT)"},
	},
	// struct ib_uverbs_wc and struct ib_uverbs_send_wr (ib_user_verbs.h)
	exUnion("ib_uverbs_wc"),
	exUnion("ib_uverbs_send_wr"),
	wrUnion("ib_uverbs_send_wr"),
	[]unionMember{
		{parent: "ib_uverbs_send_wr", field: "Wr", method: "Ud", member: "wr.ud",
			doc: "the wr union as ud (UD sends)"},

		// mlx5-abi.h
		{parent: "mlx5_ib_create_qp", field: "SqBufAddr", method: "AccessKey", member: "access_key", goType: "uint64",
			doc: "the anonymous {sq_buf_addr, access_key} union as access_key (DCI streams / DCT access key)"},

		// rdma_user_cm.h: the event's param union is conn for connected ids, ud
		// for UD ids (the union is only 4-byte aligned, at offset 20).
		{parent: "rdma_ucm_event_resp", field: "Param", method: "Conn", member: "param.conn", goType: "RdmaUcmConnParam",
			doc: "the param union as conn (events of RC ids: connection parameters and private data)"},
		{parent: "rdma_ucm_event_resp", field: "Param", method: "Ud", member: "param.ud", goType: "RdmaUcmUdParam",
			doc: "the param union as ud (events of UD ids and multicast events: QPN, QKey, address handle)"},
	},
	// rdma_user_rxe.h
	exUnion("rxe_send_wr"),
	wrUnion("rxe_send_wr"),
	[]unionMember{
		{parent: "rxe_send_wr", field: "Wr", method: "Ud", member: "wr.ud",
			doc: "the wr union as ud (UD sends: remote QPN/QKey, ah_num and the legacy inline AV)"},
		{parent: "rxe_send_wr", field: "Wr", method: "Mw", member: "wr.mw",
			doc: "the wr union as mw (BIND_MW)"},
		{parent: "rxe_av", field: "SgidAddr", method: "SgidAddrIn6", member: "sgid_addr._sockaddr_in6", goType: "unix.RawSockaddrInet6",
			doc: "the sgid_addr union as struct sockaddr_in6 (the union's full 28 bytes; use Family to tell IPv4 from IPv6)"},
		{parent: "rxe_av", field: "DgidAddr", method: "DgidAddrIn6", member: "dgid_addr._sockaddr_in6", goType: "unix.RawSockaddrInet6",
			doc: "the dgid_addr union as struct sockaddr_in6 (the union's full 28 bytes; use Family to tell IPv4 from IPv6)"},
		{parent: "rxe_av", field: "SgidAddr", method: "SgidAddrIn", member: "sgid_addr._sockaddr_in", goType: "unix.RawSockaddrInet4",
			doc: "the sgid_addr union as struct sockaddr_in (network_type RXE_NETWORK_TYPE_IPV4)"},
		{parent: "rxe_av", field: "DgidAddr", method: "DgidAddrIn", member: "dgid_addr._sockaddr_in", goType: "unix.RawSockaddrInet4",
			doc: "the dgid_addr union as struct sockaddr_in (network_type RXE_NETWORK_TYPE_IPV4)"},

		// siw-abi.h: the anonymous unions of the shared queue elements.
		{parent: "siw_sqe", field: "Raddr", method: "BaseMr", member: "base_mr", goType: "uint64",
			doc: "the anonymous {raddr, base_mr} union as base_mr (SIW_OP_REG_MR, kernel users only)"},
		{parent: "siw_sqe", field: "Sge", method: "Access", member: "access", goType: "uint64",
			doc: "the anonymous {sge, access} union as access (SIW_OP_REG_MR, kernel users only)"},
		{parent: "siw_cqe", field: "ImmData", method: "InvalStag", member: "inval_stag", goType: "uint32",
			doc: "the anonymous {imm_data, inval_stag} union as inval_stag (the STag a received SEND_WITH_INV invalidated)"},
		{parent: "siw_cqe", field: "BaseQp", method: "QpId", member: "qp_id", goType: "uint64",
			doc: "the anonymous {base_qp, qp_id} union as qp_id (the QP number, in the CQEs of user CQs)"},
	})

// foreignTypes maps C struct tags that are not declared by any generated
// header to the Go type used for them. The layouts are the same on every
// Linux target (checked by the compile-time size assertions of the files that
// use them and by abi/layout_test.go).
var foreignTypes = map[string]string{
	"sockaddr_in":  "unix.RawSockaddrInet4",
	"sockaddr_in6": "unix.RawSockaddrInet6",
	// x/sys/unix has no 128-byte sockaddr_storage (RawSockaddrAny is 112
	// bytes); KernelSockaddrStorage is hand-written in abi/sockaddr_linux.go.
	"__kernel_sockaddr_storage": "KernelSockaddrStorage",
}
