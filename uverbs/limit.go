package uverbs

import "github.com/goverbs/goverbs/cgroup/limit"

// limitErr turns the kernel's EAGAIN from a charge against the rdma cgroup controller into a typed
// *cgroup.LimitError naming the device and the resource (hca_handle for a context, hca_object for every other
// object), so errors.Is matches both unix.EAGAIN and cgroup.ErrLimitReached. It needs only the leaf package
// cgroup/limit, not the cgroup controller's whole package.
func limitErr(dev, resource string, err error) error {
	return limit.Charge(err, dev, limit.Resource(resource))
}
