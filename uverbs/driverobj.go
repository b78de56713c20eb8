package uverbs

import (
	"fmt"
	"sync/atomic"

	"github.com/goverbs/goverbs/rawcmd"
)

// driverObjects counts the kernel objects a provider created through provider.Device.Objects (mlx5's UAR
// pages) and has not destroyed yet. They are not the user's objects: they live as long as the provider's
// context state and are destroyed by the provider's Close, so they do not hold Context.Close back; the count
// only has to be zero once the provider's Close has run. It is atomic because the provider destroys them from
// inside Context.Close, which holds the context's lock.
type driverObjects struct {
	live atomic.Int64
}

// driverObject is the provider.Device.Objects hook of c: the provider's own create or destroy command, issued
// on c's command fd like every core command, with a cgroup refusal of a create mapped to the typed limit error
// the core's creates return.
func (c *Context) driverObject(cmd *rawcmd.Cmd, create bool) error {
	if err := cmd.Invoke(c.fd); err != nil {
		if create {
			return limitErr(c.dev.Name, "hca_object", err)
		}
		return err
	}
	if create {
		c.drvObjs.live.Add(1)
	} else {
		c.drvObjs.live.Add(-1)
	}
	return nil
}

// leaked reports driver objects the provider did not destroy (closing the command fd destroys them in the
// kernel; the error says the provider's bookkeeping is wrong).
func (d *driverObjects) leaked() error {
	if n := d.live.Load(); n != 0 {
		return fmt.Errorf("provider left %d driver objects undestroyed (closing the command fd releases them)", n)
	}
	return nil
}
