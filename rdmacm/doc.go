// Package rdmacm is librdmacm in pure Go: RDMA connection management through
// the kernel's ucma interface (/dev/infiniband/rdma_cm), without cgo.
//
// # Two levels
//
// The low-level API mirrors librdmacm one to one:
//
//	rdma_create_event_channel  NewChannel            rdma_get_cm_event   Channel.GetEvent
//	rdma_create_id             Channel.CreateID      rdma_destroy_id     ID.Close
//	rdma_bind_addr             ID.Bind               rdma_listen         ID.Listen
//	rdma_resolve_addr          ID.ResolveAddr        rdma_resolve_route  ID.ResolveRoute
//	rdma_create_qp             ID.CreateQP           rdma_destroy_qp     ID.DestroyQP
//	rdma_connect               ID.Connect            rdma_accept         ID.Accept
//	rdma_reject                ID.Reject             rdma_disconnect     ID.Disconnect
//	rdma_establish             ID.Establish          rdma_init_qp_attr   ID.InitQPAttr
//	rdma_set_option            ID.SetOption (SetTOS, SetReuseAddr, SetAFOnly, SetAckTimeout)
//	rdma_notify                ID.Notify             rdma_migrate_id     ID.Migrate
//	rdma_join_multicast(_ex)   ID.JoinMulticast      rdma_leave_multicast Multicast.Leave
//	QUERY (addr, gid, path)    ID.QueryAddr, ID.QueryGID, ID.QueryPath
//	rdma_create_srq(_ex)       ID.CreateSRQ          rdma_destroy_srq    ID.DestroySRQ
//	rdma_get_devices           Devices               rdma_free_devices   DeviceList.Close
//	rdma_write_cm_event        ID.WriteCMEvent       rdma_create_ep      CreateEP
//	rdma_resolve_addrinfo      ID.ResolveAddrInfo    rdma_query_addrinfo ID.QueryAddrInfo
//
// Events are copies (Event): they need no rdma_ack_cm_event. Like librdmacm,
// GetEvent does the work some events imply before returning them: a
// CONNECT_REQUEST carries a new ID (Event.ID; Event.Listener is the
// listening one); on the active side, CONNECT_RESPONSE of an id with a QP
// moves the QP INIT -> INIT -> RTR -> RTS with the kernel's attributes
// (INIT_QP_ATTR), sends the RTU and is returned as ESTABLISHED.
//
// The high-level API is Dial, and Listen / Listener.Accept / Request.Accept
// (or Request.Reject): each gives a Conn with its own event channel, id,
// device context, PD, CQs and a QP in RTS (RC) or with the remote UD address
// (UD); Conn.Close disconnects gracefully and releases all of it.
//
// # Devices
//
// An id finds its RDMA device from the node GUID that QUERY ADDR reports
// once it is bound or resolved; the channel opens one uverbs.Context and one
// PD per device, shares them between its ids (ID.Device) and keeps them until
// it is closed (objects the application makes on that PD must be closed
// first). QPs are created with package uverbs and taken through their states
// exactly in librdmacm's order, with the attributes the kernel computes.
//
// # Addresses
//
// rdma_cm needs an IP address of a netdev that carries an RDMA device (for
// rxe, the netdev it was added to); 127.0.0.1 has none. Listening on 0.0.0.0
// or :: covers every device.
//
// # Errors
//
// Every error names the command and the id (*Error) and unwraps to the
// kernel's errno, so errors.Is(err, unix.EINVAL) works. Connection attempts
// that end with another event than the expected one give an *EventError
// (REJECTED unwraps to ECONNREFUSED, with the peer's private data).
// Private data longer than the CM message allows is refused before any
// system call with ErrPrivateDataTooLong; calls in the wrong state with
// ErrState (both also match unix.EINVAL).
//
// # Waiting
//
// The rdma_cm fd only ever polls readable, and an event is fetched by a
// GET_EVENT write. The fd is non-blocking in Go's runtime poller; GET_EVENT
// runs inside syscall.RawConn.Read and waits on EAGAIN, and a
// context.Context ends the wait through the file's read deadline. No thread
// blocks in the kernel.
package rdmacm
