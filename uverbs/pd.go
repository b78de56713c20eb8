package uverbs

import (
	"fmt"
	"sync/atomic"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
	"golang.org/x/sys/unix"
)

// PD is a protection domain, or a parent domain (AllocParentDomain, td.go), which stands for its protection
// domain wherever a PD is taken.
type PD struct {
	ctx     *Context
	handle  uint32 // a parent domain's is its protection domain's
	prov    provider.PD
	dom     *parentDomain // nil for a protection domain
	domains atomic.Int32  // parent domains made on this protection domain
	// imported: made by Context.ImportPD; Close forgets it (the exporter deallocates it).
	imported bool
	life
}

// AllocPD allocates a protection domain (ibv_alloc_pd).
func (c *Context) AllocPD() (*PD, error) {
	if err := c.addObject(); err != nil {
		return nil, wrap("alloc PD", c.dev.Name, err)
	}
	pd := &PD{ctx: c}
	in := new(abi.IbUverbsAllocPd)
	out := new(abi.IbUverbsAllocPdResp)
	created := false
	prov, err := c.prov.AllocPD(func(uhwIn, uhwOut []byte) error {
		err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_ALLOC_PD, CoreIn: rawcmd.Bytes(in),
			CoreOut: rawcmd.Bytes(out), UHWIn: uhwIn, UHWOut: uhwOut})
		created = err == nil
		return err
	})
	if err != nil {
		if created {
			c.destroyObject(abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY, abi.UVERBS_ATTR_DESTROY_PD_HANDLE, out.PdHandle)
		}
		c.dropObject()
		return nil, wrap("alloc PD", c.dev.Name, limitErr(c.dev.Name, "hca_object", err))
	}
	pd.handle = out.PdHandle
	pd.prov = prov
	return pd, nil
}

// Handle is the kernel's handle for the PD (a parent domain's is its protection domain's).
func (pd *PD) Handle() uint32 { return pd.handle }

// Context is the context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close deallocates the PD (ibv_dealloc_pd). The kernel refuses (EBUSY) while MRs, QPs, AHs, SRQs or MWs still
// use it; goverbs asks the kernel and reports its answer. While parent domains made on it are open, goverbs
// refuses with EBUSY itself. Close of a parent domain releases it (EBUSY while QPs, CQs or SRQs made in it are
// open), not its protection domain. Close of an imported PD (Context.ImportPD) forgets it (ibv_unimport_pd).
func (pd *PD) Close() error {
	if pd == nil {
		return nil
	}
	if pd.dom != nil {
		return pd.closeDomain()
	}
	return pd.life.close(func() error {
		// libmlx5 refuses an unimport too while a parent domain holds the PD (_mlx5_free_pd).
		if n := pd.domains.Load(); n > 0 {
			return wrapf(pd.ctx.dev.Name, fmt.Errorf("%d parent domains still hold it: %w", n, unix.EBUSY), "dealloc PD %#x", pd.handle)
		}
		if pd.imported {
			pd.ctx.dropObject()
			return nil
		}
		if err := pd.ctx.destroyObject(abi.UVERBS_OBJECT_PD, abi.UVERBS_METHOD_PD_DESTROY, abi.UVERBS_ATTR_DESTROY_PD_HANDLE, pd.handle); err != nil {
			return wrapf(pd.ctx.dev.Name, err, "dealloc PD %#x", pd.handle)
		}
		pd.ctx.dropObject()
		return nil
	})
}

// handle may already name a newer PD: verbs on a closed PD must not reach the kernel.

// destroyObject runs a DESTROY method whose only attribute is the object's handle.
func (c *Context) destroyObject(object, method, attr uint16, handle uint32) error {
	cmd := c.newCmd(object, method)
	cmd.Object(attr, handle)
	return cmd.Invoke(c.fd)
}

// String names the PD.
func (pd *PD) String() string {
	if pd.dom != nil {
		return fmt.Sprintf("parent domain of PD %#x on %s", pd.handle, pd.ctx.dev.Name)
	}
	return fmt.Sprintf("PD %#x on %s", pd.handle, pd.ctx.dev.Name)
}
