package uverbs

// limitErr is where a kernel EAGAIN from a charge against the rdma cgroup controller becomes a typed limit
// error; until the cgroup package provides that type, errors pass through unchanged.
func limitErr(dev, resource string, err error) error { return err }
