package rdmacm

import (
	"context"
	"errors"
	"time"
)

// epResolveTimeout is librdmacm's rdma_create_ep timeout for the address and the route (2000 ms each).
const epResolveTimeout = 2 * time.Second

// CreateEP makes an unconnected endpoint from a GetAddrInfo result (rdma_create_ep): an id of ai's port
// space and QP type on a channel of its own, which its Close closes too (librdmacm's synchronous id).
//
// A passive result (AIPassive) gives an id bound to ai.SrcAddr, which keeps a copy of qp (when not nil):
// call Listen on it, then GetRequest, which returns each connection request as an endpoint of its own with
// its QP made from those attributes. (Its CONNECT_REQUESTs may also be read from its Channel with GetEvent:
// those ids stay on the listener's channel and get no QP.)
//
// An active result is resolved before CreateEP returns: ADDR_RESOLVED and ROUTE_RESOLVED are waited for
// (2 s each, as librdmacm, and ctx), from ai.SrcAddr (when set) to ai.DstAddr. With qp, the id's QP is
// made (CreateQP). The caller then calls Connect and reads ESTABLISHED from the id's Channel. An event
// other than the one expected fails CreateEP with an *EventError inside; nothing is left open on failure.
//
// Unlike librdmacm's synchronous ids, whose rdma_connect and rdma_accept block until ESTABLISHED, the
// endpoints' Connect and Accept stay asynchronous, as on every other ID: ESTABLISHED (or REJECTED, ...)
// is read from the endpoint's own Channel, which carries nothing but that endpoint's events.
func CreateEP(ctx context.Context, ai AddrInfo, qp *QPInitAttr) (*ID, error) {
	passive := ai.Flags&AIPassive != 0
	ch, err := NewChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(ai.PortSpace, ai.QPType)
	if err != nil {
		return nil, errors.Join(err, ch.Close())
	}
	id.ownCh = true
	if passive && qp != nil {
		a := *qp
		id.epQP = &a
	}
	if err := setUpEP(ctx, id, ai, qp, passive); err != nil {
		return nil, errors.Join(err, id.Close()) // and the channel
	}
	return id, nil
}

// setUpEP binds a passive endpoint, resolves an active one and makes its QP.
func setUpEP(ctx context.Context, id *ID, ai AddrInfo, qp *QPInitAttr, passive bool) error {
	if passive {
		return id.Bind(ai.SrcAddr)
	}
	if err := id.ResolveAddr(ai.SrcAddr, ai.DstAddr, epResolveTimeout); err != nil {
		return err
	}
	if _, err := await(ctx, id, "resolve addr "+ai.DstAddr.String(), EventAddrResolved); err != nil {
		return err
	}
	if err := id.ResolveRoute(epResolveTimeout); err != nil {
		return err
	}
	if _, err := await(ctx, id, "resolve route "+ai.DstAddr.String(), EventRouteResolved); err != nil {
		return err
	}
	if qp != nil {
		if _, err := id.CreateQP(*qp); err != nil {
			return err
		}
	}
	return nil
}

// GetRequest waits until ctx ends for the next connection request of a listening CreateEP endpoint
// (rdma_get_request) and returns it as an endpoint of its own: an id on a new channel that its Close closes
// too (librdmacm's synchronous id), whose QP is already made (CreateQP) from the QP attributes CreateEP
// was given, if any. Answer it with Accept (then read ESTABLISHED from its Channel) or Reject, and Close
// it. Listener.Accept is the counterpart for Listen's listeners.
//
// The request is read from the listener's own channel. Any other event there (a DEVICE_REMOVAL, the
// event of an id left on the channel by GetEvent) fails GetRequest with an *EventError holding it, as
// librdmacm fails rdma_get_request (REJECTED: ECONNREFUSED; an error status: its errno). A request whose
// channel, migration or QP cannot be made is rejected and destroyed, and its error returned. An id that is
// not a listening CreateEP endpoint, or no longer one (migrated to another channel), is refused with an
// error matching ErrState and unix.EINVAL (librdmacm refuses ids that are not synchronous with EINVAL).
func (id *ID) GetRequest(ctx context.Context) (*ID, error) {
	const op = "get request"
	id.mu.Lock()
	err := id.check(op)
	if err == nil && !id.ownCh {
		err = opErr(op, id.kid, errState("not an endpoint on a channel of its own (CreateEP)"))
	} else if err == nil && !id.listening {
		err = opErr(op, id.kid, errState("endpoint is not listening"))
	}
	ch, attr := id.ch, id.epQP
	id.mu.Unlock()
	if err != nil {
		return nil, err
	}
	ev, err := ch.GetEvent(ctx)
	if err != nil {
		return nil, opErr(op, id.kid, err)
	}
	if ev.Type != EventConnectRequest || ev.Listener != id {
		return nil, opErr(op, id.kid, &EventError{Event: ev})
	}
	req := ev.ID
	if err := adoptRequest(req, attr); err != nil {
		req.Reject(nil)
		return nil, opErr(op, id.kid, errors.Join(err, req.Close())) // and its channel, once it has one
	}
	return req, nil
}

// adoptRequest moves a request's id to a channel of its own and makes its QP.
func adoptRequest(req *ID, attr *QPInitAttr) error {
	own, err := NewChannel()
	if err != nil {
		return err
	}
	if err := req.Migrate(own); err != nil {
		return errors.Join(err, own.Close())
	}
	req.mu.Lock()
	req.ownCh = true
	req.mu.Unlock()
	if attr != nil {
		if _, err := req.CreateQP(*attr); err != nil {
			return err
		}
	}
	return nil
}
