package rdmacm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// epResolveTimeout is librdmacm's rdma_create_ep timeout for the address and the route (2000 ms each).
const epResolveTimeout = 2 * time.Second

// CreateEP makes an unconnected endpoint from a GetAddrInfo result (rdma_create_ep): an id of ai's port
// space and QP type on a channel of its own, which its Close closes too (librdmacm's synchronous id).
//
// A passive result (AIPassive) gives an id bound to ai.SrcAddr: call Listen on it and read its
// CONNECT_REQUESTs from its Channel. qp must be nil there (librdmacm keeps it for the ids rdma_get_request
// returns; goverbs' counterpart of that is Listen with Options, which makes the requests' QPs): EINVAL.
//
// An active result is resolved before CreateEP returns: ADDR_RESOLVED and ROUTE_RESOLVED are waited for
// (2 s each, as librdmacm, and ctx), from ai.SrcAddr (when set) to ai.DstAddr. With qp, the id's QP is
// made (CreateQP). The caller then calls Connect and reads ESTABLISHED from the id's Channel. An event
// other than the one expected fails CreateEP with an *EventError inside; nothing is left open on failure.
func CreateEP(ctx context.Context, ai AddrInfo, qp *QPInitAttr) (*ID, error) {
	op := "create ep"
	passive := ai.Flags&AIPassive != 0
	if passive && qp != nil {
		return nil, &Error{Op: op, Err: fmt.Errorf("QP attributes for a passive endpoint (use Listen with Options): %w",
			unix.EINVAL)}
	}
	ch, err := NewChannel()
	if err != nil {
		return nil, err
	}
	id, err := ch.CreateID(ai.PortSpace, ai.QPType)
	if err != nil {
		return nil, errors.Join(err, ch.Close())
	}
	id.ownCh = true
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
