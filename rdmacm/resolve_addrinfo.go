package rdmacm

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/goverbs/goverbs/abi"
	"golang.org/x/sys/unix"
)

// ResolveAddrInfo resolves node and service for the id in the background of its channel
// (rdma_resolve_addrinfo): ADDRINFO_RESOLVED follows on the channel (or ADDRINFO_ERROR), after which
// QueryAddrInfo returns the result. One resolution at a time (EBUSY while one is pending).
//
// Without AISA in the hints (the DNS path, librdmacm's default) the lookup is GetAddrInfo's, done before
// ResolveAddrInfo returns, and the event is one the library writes onto the channel through the kernel
// (WRITE_CM_EVENT, as librdmacm does): on kernels without that command (Linux 6.12 and older) it fails
// with an error that matches ErrNotSupported, as librdmacm's does.
//
// With AISA the kernel asks the InfiniBand SA for the service record of service (a number, strtoull's
// bases, is a service id, anything else a service name) on the port the id is bound to (RESOLVE_IB_SERVICE;
// node must be empty and AIDNS unset, else ErrNotSupported, as librdmacm). A port without an SA (RoCE,
// iWARP) makes the kernel refuse (EOPNOTSUPP, returned as ErrNotSupported); kernels without the command
// too. The records an SA returns are AF_IB addresses, which package rdmacm does not represent: such an
// answer arrives as ADDRINFO_ERROR with status EOPNOTSUPP.
func (id *ID) ResolveAddrInfo(node, service string, hints *AddrInfoHints) error {
	op := "resolve addrinfo"
	id.mu.Lock()
	if err := id.check(op); err != nil {
		id.mu.Unlock()
		return err
	}
	if id.aiResolving {
		id.mu.Unlock()
		return opErr(op, id.kid, fmt.Errorf("a resolution is pending: %w", unix.EBUSY))
	}
	id.aiResolving = true
	id.mu.Unlock()
	err := id.resolveAddrInfo(node, service, hints)
	if err != nil {
		id.mu.Lock()
		id.aiResolving, id.aiResult = false, nil
		id.mu.Unlock()
	}
	return opErr(op, id.kid, err)
}

func (id *ID) resolveAddrInfo(node, service string, hints *AddrInfoHints) error {
	var flags AIFlags
	if hints != nil {
		flags = hints.Flags
	}
	if flags&AISA == 0 {
		ai, err := GetAddrInfo(node, service, hints) // the lookup, outside the id's lock
		if err != nil {
			return err
		}
		id.mu.Lock()
		defer id.mu.Unlock()
		if err := id.check("resolve addrinfo"); err != nil {
			return err
		}
		id.aiResult = ai
		return id.writeEventLocked(abi.RDMA_CM_EVENT_INTERNAL, 0, uint64(EventAddrInfoResolved))
	}
	if flags&AIDNS != 0 || node != "" {
		return fmt.Errorf("RAI_SA with RAI_DNS or a node: %w", ErrNotSupported)
	}
	if service == "" {
		return fmt.Errorf("RAI_SA without a service: %w", unix.EINVAL)
	}
	req := abi.RdmaUcmResolveIbService{Id: id.kid}
	if v, err := strconv.ParseUint(service, 0, 64); err == nil {
		req.Ibs.ServiceId, req.Ibs.Flags = v, abi.RDMA_USER_CM_IB_SERVICE_FLAG_ID
	} else {
		copy(req.Ibs.ServiceName[:abi.RDMA_USER_CM_IB_SERVICE_NAME_SIZE-1], service)
		req.Ibs.Flags = abi.RDMA_USER_CM_IB_SERVICE_FLAG_NAME
	}
	id.mu.Lock()
	defer id.mu.Unlock()
	err := id.ch.newerCommand(abi.RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, "RESOLVE_IB_SERVICE",
		exec(id.ch, abi.RDMA_USER_CM_CMD_RESOLVE_IB_SERVICE, &req, nil, 0))
	if errorIsErrno(err, unix.EOPNOTSUPP) {
		err = fmt.Errorf("the id's port has no InfiniBand SA: %w (%w)", ErrNotSupported, err)
	}
	return err
}

// errorIsErrno reports whether err carries the kernel's errno e itself (not a sentinel that matches it).
func errorIsErrno(err error, e unix.Errno) bool {
	var en unix.Errno
	return errors.As(err, &en) && en == e
}

// QueryAddrInfo returns what the last ResolveAddrInfo found (rdma_query_addrinfo), once its
// ADDRINFO_RESOLVED has been read, and ends that resolution. ENOENT when none is pending or it found
// nothing (ADDRINFO_ERROR, or no resolution pending).
func (id *ID) QueryAddrInfo() ([]AddrInfo, error) {
	id.mu.Lock()
	defer id.mu.Unlock()
	op := "query addrinfo"
	if err := id.check(op); err != nil {
		return nil, err
	}
	if !id.aiResolving || id.aiResult == nil {
		return nil, opErr(op, id.kid, fmt.Errorf("no resolved addrinfo: %w", unix.ENOENT))
	}
	ai := id.aiResult
	id.aiResolving, id.aiResult = false, nil
	return ai, nil
}
