package uverbs

import (
	"fmt"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/internal/provider"
	"github.com/goverbs/goverbs/rawcmd"
)

// PD is a protection domain.
type PD struct {
	ctx    *Context
	handle uint32
	prov   provider.PD
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

// Handle is the kernel's handle for the PD.
func (pd *PD) Handle() uint32 { return pd.handle }

// Context is the context the PD belongs to.
func (pd *PD) Context() *Context { return pd.ctx }

// Close deallocates the PD (ibv_dealloc_pd). The kernel refuses (EBUSY) while MRs, QPs, AHs, SRQs or MWs still
// use it; goverbs asks the kernel and reports its answer.
func (pd *PD) Close() error {
	if pd == nil {
		return nil
	}
	return pd.life.close(func() error {
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
func (pd *PD) String() string { return fmt.Sprintf("PD %#x on %s", pd.handle, pd.ctx.dev.Name) }
