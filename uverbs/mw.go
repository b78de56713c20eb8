package uverbs

import (
	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/rawcmd"
)

// MWType is a memory window type.
type MWType uint8

// Memory window types.
const (
	MWType1 MWType = 1
	MWType2 MWType = 2
)

// MW is a memory window. Bind it with a send work request of opcode WRBindMW (type 2, and type 1 on rxe,
// whose provider also binds type 1 windows through the send queue).
type MW struct {
	pd     *PD
	handle uint32
	rkey   uint32
	typ    MWType
	life
}

// AllocMW allocates a memory window (ibv_alloc_mw).
func (pd *PD) AllocMW(typ MWType) (*MW, error) {
	c := pd.ctx
	if err := pd.checkOpen(); err != nil {
		return nil, wrap("alloc MW", c.dev.Name, err)
	}
	if err := c.addObject(); err != nil {
		return nil, wrap("alloc MW", c.dev.Name, err)
	}
	in := &abi.IbUverbsAllocMw{PdHandle: pd.handle, MwType: uint8(typ)}
	out := new(abi.IbUverbsAllocMwResp)
	if err := c.write(&rawcmd.Write{Cmd: abi.IB_USER_VERBS_CMD_ALLOC_MW, CoreIn: rawcmd.Bytes(in), CoreOut: rawcmd.Bytes(out)}); err != nil {
		c.dropObject()
		return nil, wrapf(c.dev.Name, limitErr(c.dev.Name, "hca_object", err), "alloc MW type %d", typ)
	}
	return &MW{pd: pd, handle: out.MwHandle, rkey: out.Rkey, typ: typ}, nil
}

// RKey is the window's current remote key. After a successful bind the key is the NewRKey of the bind request;
// call SetRKey with it (as rdma-core's ibv_bind_mw updates mw->rkey).
func (mw *MW) RKey() uint32 { return mw.rkey }

// SetRKey records the rkey a completed bind (or an invalidate) gave the window.
func (mw *MW) SetRKey(rkey uint32) { mw.rkey = rkey }

// Type is the window's type.
func (mw *MW) Type() MWType { return mw.typ }

// Handle is the kernel's handle.
func (mw *MW) Handle() uint32 { return mw.handle }

// Close deallocates the window (ibv_dealloc_mw).
func (mw *MW) Close() error {
	if mw == nil {
		return nil
	}
	return mw.life.close(func() error {
		c := mw.pd.ctx
		if err := c.destroyObject(abi.UVERBS_OBJECT_MW, abi.UVERBS_METHOD_MW_DESTROY, abi.UVERBS_ATTR_DESTROY_MW_HANDLE, mw.handle); err != nil {
			return wrapf(c.dev.Name, err, "dealloc MW %#x", mw.handle)
		}
		c.dropObject()
		return nil
	})
}
