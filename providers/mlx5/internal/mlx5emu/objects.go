package mlx5emu

import (
	"fmt"
	"math/bits"

	"golang.org/x/sys/unix"
)

// Access is a set of memory / QP access rights with the values of
// enum ibv_access_flags.
type Access uint32

// Access rights.
const (
	AccessLocalWrite   Access = 1 << 0
	AccessRemoteWrite  Access = 1 << 1
	AccessRemoteRead   Access = 1 << 2
	AccessRemoteAtomic Access = 1 << 3
)

// QPType is the transport service of an emulated QP.
type QPType int

// QP types.
const (
	RC QPType = iota + 1
	UC
	UD
)

func (t QPType) String() string {
	switch t {
	case RC:
		return "RC"
	case UC:
		return "UC"
	case UD:
		return "UD"
	}
	return fmt.Sprintf("QPType(%d)", int(t))
}

// QPState is a QP state of the modelled state machine (SQD and SQE are not
// modelled).
type QPState int

// QP states.
const (
	StateReset QPState = iota
	StateInit
	StateRTR
	StateRTS
	StateError
)

func (s QPState) String() string {
	switch s {
	case StateReset:
		return "RESET"
	case StateInit:
		return "INIT"
	case StateRTR:
		return "RTR"
	case StateRTS:
		return "RTS"
	case StateError:
		return "ERROR"
	}
	return fmt.Sprintf("QPState(%d)", int(s))
}

// RNRRetryInfinite as QPAttr.RNRRetry retries RNR forever (IB encoding 7).
const RNRRetryInfinite = 7

type mr struct {
	key    uint32
	buf    []byte
	base   uint64
	access Access
	pdn    uint32
}

// RegisterMR registers buf as a memory region of protection domain pdn, as
// the kernel does on REG_MR, and returns its keys (mlx5 uses one mkey for
// both: lkey == rkey). The emulator keeps buf referenced until DeregisterMR.
func (d *Device) RegisterMR(buf []byte, access Access, pdn uint32) (lkey, rkey uint32, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(buf) == 0 {
		return 0, 0, fmt.Errorf("mlx5emu: register MR: empty buffer: %w", unix.EINVAL)
	}
	if access&^(AccessLocalWrite|AccessRemoteWrite|AccessRemoteRead|AccessRemoteAtomic) != 0 {
		return 0, 0, fmt.Errorf("mlx5emu: register MR: access %#x: %w", uint32(access), unix.EINVAL)
	}
	if access&(AccessRemoteWrite|AccessRemoteAtomic) != 0 && access&AccessLocalWrite == 0 {
		// Same rule as ib_check_mr_access().
		return 0, 0, fmt.Errorf("mlx5emu: register MR: remote write/atomic without local write: %w", unix.EINVAL)
	}
	idx := d.nextMR
	d.nextMR++
	// mkey = index << 8 | variant; never MLX5_INVALID_LKEY (0x100).
	key := idx<<8 | (idx*0x35+0x11)&0xff
	d.mrs[key] = &mr{key: key, buf: buf, base: addrOf(buf), access: access, pdn: pdn}
	return key, key, nil
}

// DeregisterMR removes the memory region with the given key.
func (d *Device) DeregisterMR(key uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, err := object(d.mrs, "deregister", "MR", key); err != nil {
		return err
	}
	delete(d.mrs, key)
	return nil
}

// lookup resolves [addr, addr+n) through the region with key, for a region of
// protection domain pdn that must grant need.
func (d *Device) lookup(key uint32, pdn uint32, addr uint64, n uint32, need Access) ([]byte, bool) {
	m, ok := d.mrs[key]
	if !ok || m.pdn != pdn || m.access&need != need {
		return nil, false
	}
	if addr < m.base || addr-m.base > uint64(len(m.buf)) || uint64(n) > uint64(len(m.buf))-(addr-m.base) {
		return nil, false
	}
	off := addr - m.base
	return m.buf[off : off+uint64(n)], true
}

type cq struct {
	cqn     uint32
	buf     []byte
	dbr     []byte
	ncqe    uint32
	pi      uint32
	overrun bool
	refs    int
	// notify[i] records whether the CQE in slot i would wake a
	// solicited-only waiter (SE set or error).
	notify  []bool
	armed   bool
	armSol  bool
	lastArm uint32
	// recArm is set when an arm was taken from the record's arm word
	// before its UAR doorbell was seen (background mode): the doorbell
	// with the same word is then not a new request.
	recArm bool
	stats  CQStats
}

// CQStats are per-CQ counters for tests.
type CQStats struct {
	// CQEs counts CQEs written; Dropped those lost to an overrun.
	CQEs    uint64
	Dropped uint64
	// ArmDoorbells counts arm doorbells seen on the UAR; ArmsFromRecord
	// arm requests recovered from the doorbell record's arm word only.
	ArmDoorbells   uint64
	ArmsFromRecord uint64
	// Events counts completion events fired.
	Events uint64
}

// CQStats returns the counters of a CQ.
func (d *Device) CQStats(cqn uint32) (CQStats, error) {
	return read(d, d.cqs, "stats of", "CQ", cqn, func(c *cq) CQStats { return c.stats })
}

// CreateCQ registers a completion queue as CREATE_CQ would: buf holds ncqe
// 64-byte CQEs (ncqe = len(buf)/64, a power of two), each op_own already
// stamped 0xF0 by the driver (an unstamped CQE is recorded as an error);
// dbrec is the 8-byte doorbell record (set_ci be32 at 0, arm be32 at 4).
func (d *Device) CreateCQ(buf, dbrec []byte) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(buf) / 64
	if n < 2 || len(buf)%64 != 0 || n&(n-1) != 0 || n > 1<<22 || !aligned(buf, 64) {
		return 0, fmt.Errorf("mlx5emu: create CQ: buffer of %d bytes (need a power of two of 64-byte, 64-aligned CQEs): %w", len(buf), unix.EINVAL)
	}
	if len(dbrec) < 8 || !aligned(dbrec, 8) {
		return 0, fmt.Errorf("mlx5emu: create CQ: doorbell record must be 8 aligned bytes: %w", unix.EINVAL)
	}
	cqn := d.nextCQN
	d.nextCQN++
	for i := 0; i < n; i++ {
		if op := buf[i*64+63]; op != 0xF0 {
			d.protoErr("create CQ %#x: CQE %d op_own %#02x, not stamped MLX5_CQE_INVALID<<4 (0xf0)", cqn, i, op)
			break
		}
	}
	c := &cq{cqn: cqn, buf: buf, dbr: dbrec[:8], ncqe: uint32(n), notify: make([]bool, n)}
	c.lastArm = loadBE32(c.dbr[4:])
	d.cqs[cqn] = c
	return cqn, nil
}

// DestroyCQ removes a CQ; it fails with EBUSY while a QP uses it.
func (d *Device) DestroyCQ(cqn uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return destroyShared(d.cqs, "CQ", cqn, func(c *cq) int { return c.refs })
}

// object returns object n of kind ("CQ", "QP") in objs, or, when there is
// none, EINVAL for the operation op ("destroy", "query"); d.mu held.
func object[T any](objs map[uint32]*T, op, kind string, n uint32) (*T, error) {
	o, ok := objs[n]
	if !ok {
		return nil, fmt.Errorf("mlx5emu: %s %s %#x: %w", op, kind, n, unix.EINVAL)
	}
	return o, nil
}

// read returns get of object n of kind in objs, read with d.mu held, or
// object's error (op names the query). The maps are made once, by New.
func read[T, R any](d *Device, objs map[uint32]*T, op, kind string, n uint32, get func(*T) R) (R, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	o, err := object(objs, op, kind, n)
	if err != nil {
		var zero R
		return zero, err
	}
	return get(o), nil
}

// destroyShared removes object n of kind ("CQ", "SRQ") from objs, unless
// QPs still use it (refs); d.mu held.
func destroyShared[T any](objs map[uint32]*T, kind string, n uint32, refs func(*T) int) error {
	o, err := object(objs, "destroy", kind, n)
	if err != nil {
		return err
	}
	if r := refs(o); r > 0 {
		return fmt.Errorf("mlx5emu: destroy %s %#x: in use by %d QPs: %w", kind, n, r, unix.EBUSY)
	}
	delete(objs, n)
	return nil
}

// CQOverrun reports whether the CQ overflowed: a CQE had to be written while
// the ring held ncqe unconsumed entries (by the consumer index in the
// doorbell record). An overrun CQ is in error and drops every later CQE.
func (d *Device) CQOverrun(cqn uint32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	c, ok := d.cqs[cqn]
	return ok && c.overrun
}

// SRQConfig describes a shared receive queue as CREATE_SRQ passes it.
type SRQConfig struct {
	PDN uint32
	// Buf holds WQECnt WQEs of 1<<WQEShift bytes: a 16-byte
	// mlx5_wqe_srq_next_seg followed by data segments.
	Buf      []byte
	WQECnt   int
	WQEShift int
	// DBR is the 8-byte doorbell record; its first be32 is the
	// free-running count of posted WQEs (low 16 bits used).
	DBR []byte
	// UIDX is the SRQ user index (unused for CQEs of ordinary QPs).
	UIDX uint32
}

type srq struct {
	srqn    uint32
	cfg     SRQConfig
	ptr     uint16 // WQE index the hardware consumes next
	counter uint16 // WQEs consumed
	refs    int
}

// CreateSRQ registers a shared receive queue. The hardware starts consuming
// at WQE 0 and follows next_wqe_index of each consumed WQE.
func (d *Device) CreateSRQ(cfg SRQConfig) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cfg.WQECnt < 2 || cfg.WQECnt&(cfg.WQECnt-1) != 0 || cfg.WQECnt > 1<<15 ||
		cfg.WQEShift < 5 || cfg.WQEShift > 11 || len(cfg.Buf) < cfg.WQECnt<<cfg.WQEShift {
		return 0, fmt.Errorf("mlx5emu: create SRQ: %d WQEs of %d bytes in %d bytes: %w",
			cfg.WQECnt, 1<<cfg.WQEShift, len(cfg.Buf), unix.EINVAL)
	}
	if len(cfg.DBR) < 8 || !aligned(cfg.DBR, 8) {
		return 0, fmt.Errorf("mlx5emu: create SRQ: doorbell record must be 8 aligned bytes: %w", unix.EINVAL)
	}
	n := d.nextSRQN
	d.nextSRQN++
	d.srqs[n] = &srq{srqn: n, cfg: cfg}
	return n, nil
}

// DestroySRQ removes an SRQ; it fails with EBUSY while a QP uses it.
func (d *Device) DestroySRQ(srqn uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return destroyShared(d.srqs, "SRQ", srqn, func(s *srq) int { return s.refs })
}

// QPConfig describes a QP as CREATE_QP passes it (mlx5_ib_create_qp).
type QPConfig struct {
	Type QPType
	PDN  uint32
	// Buf holds the RQ at offset 0 (RQWQECnt << RQWQEShift bytes) and the
	// SQ right after it (SQWQECnt 64-byte basic blocks).
	Buf        []byte
	SQWQECnt   int
	RQWQECnt   int
	RQWQEShift int
	// DBR is the 8-byte doorbell record: be32 RQ counter at 0, be32 SQ
	// counter at 4 (low 16 bits used).
	DBR     []byte
	SendCQN uint32
	RecvCQN uint32
	// SRQN attaches an SRQ (0: none); RQWQECnt must then be 0.
	SRQN uint32
	// UIDX is the user index reported in CQEs (CQE version 1), 24 bits.
	UIDX uint32
	// ScatterToCQE models MLX5_QP_FLAG_SCATTER_CQE: received SENDs of at
	// most 32 bytes are delivered inside the CQE (op_own bit
	// MLX5_INLINE_SCATTER_32) instead of the receive buffers.
	ScatterToCQE bool
}

// QPStats are per-QP counters for tests.
type QPStats struct {
	// WQEsExecuted counts send WQEs executed (successfully or with an
	// error completion), NOPs included.
	WQEsExecuted uint64
	// WQEsFlushed counts send WQEs completed with WR_FLUSH_ERR.
	WQEsFlushed uint64
	// RecvsConsumed counts receive WQEs (RQ or SRQ) consumed by
	// incoming messages; RecvsFlushed those flushed.
	RecvsConsumed uint64
	RecvsFlushed  uint64
	// Doorbells counts 8-byte send doorbells seen on the UAR;
	// BlueFlameWrites the BlueFlame copies (verified against the SQ).
	Doorbells       uint64
	BlueFlameWrites uint64
	// UnverifiedUARWrites counts UAR writes for this QP the background
	// engine could not verify (seen torn or overwritten).
	UnverifiedUARWrites uint64
	// RNRRetries counts RNR retries (one per Process call while stalled).
	RNRRetries uint64
}

type qp struct {
	qpn   uint32
	cfg   QPConfig
	state QPState
	sq    []byte
	rq    []byte
	sqCnt int

	destQPN  uint32
	qkey     uint32
	access   Access
	rnrRetry int
	retryCnt int

	sqCI    uint16 // next WQE index to execute (basic blocks)
	rqCI    uint16 // RQ WQEs consumed
	dbLimit uint16 // end of the WQEs covered by doorbells (RequireDoorbell)
	rnrUsed int    // RNR retries used on the head WQE
	// shadow keeps the bytes of executed WQEs, shadowIdx the WQE index
	// whose first block is at each position (-1: none), for verifying
	// doorbells seen after execution.
	shadow    []byte
	shadowIdx []int32
	warned    bool
	stats     QPStats
}

// CreateQP registers a QP in RESET as CREATE_QP would and returns its QPN.
func (d *Device) CreateQP(cfg QPConfig) (uint32, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fail := func(format string, args ...any) (uint32, error) {
		return 0, fmt.Errorf("mlx5emu: create %v QP: "+format+": %w", append(append([]any{cfg.Type}, args...), unix.EINVAL)...)
	}
	if cfg.Type != RC && cfg.Type != UC && cfg.Type != UD {
		return fail("unknown type")
	}
	if cfg.SQWQECnt < 1 || cfg.SQWQECnt&(cfg.SQWQECnt-1) != 0 || cfg.SQWQECnt > 1<<15 {
		return fail("sq_wqe_count %d", cfg.SQWQECnt)
	}
	if cfg.SRQN != 0 {
		if cfg.RQWQECnt != 0 {
			return fail("rq_wqe_count %d with an SRQ", cfg.RQWQECnt)
		}
		s, ok := d.srqs[cfg.SRQN]
		if !ok {
			return fail("SRQ %#x does not exist", cfg.SRQN)
		}
		_ = s
	} else if cfg.RQWQECnt != 0 && (cfg.RQWQECnt&(cfg.RQWQECnt-1) != 0 || cfg.RQWQEShift < 4 || cfg.RQWQEShift > 11 || cfg.RQWQECnt > 1<<15) {
		return fail("rq_wqe_count %d rq_wqe_shift %d", cfg.RQWQECnt, cfg.RQWQEShift)
	}
	rqSize := 0
	if cfg.RQWQECnt > 0 {
		rqSize = cfg.RQWQECnt << cfg.RQWQEShift
	}
	sqSize := cfg.SQWQECnt * 64
	if len(cfg.Buf) < rqSize+sqSize || !aligned(cfg.Buf, 64) {
		return fail("buffer of %d bytes, need %d, 64-aligned", len(cfg.Buf), rqSize+sqSize)
	}
	if len(cfg.DBR) < 8 || !aligned(cfg.DBR, 8) {
		return fail("doorbell record must be 8 aligned bytes")
	}
	scq, ok1 := d.cqs[cfg.SendCQN]
	rcq, ok2 := d.cqs[cfg.RecvCQN]
	if !ok1 || !ok2 {
		return fail("send CQ %#x / recv CQ %#x does not exist", cfg.SendCQN, cfg.RecvCQN)
	}
	if cfg.UIDX > 0xffffff {
		return fail("user index %#x", cfg.UIDX)
	}
	q := &qp{
		qpn:       d.nextQPN,
		cfg:       cfg,
		rq:        cfg.Buf[:rqSize],
		sq:        cfg.Buf[rqSize : rqSize+sqSize],
		sqCnt:     cfg.SQWQECnt,
		shadow:    make([]byte, sqSize),
		shadowIdx: make([]int32, cfg.SQWQECnt),
	}
	for i := range q.shadowIdx {
		q.shadowIdx[i] = -1
	}
	d.nextQPN++
	scq.refs++
	rcq.refs++
	if cfg.SRQN != 0 {
		d.srqs[cfg.SRQN].refs++
	}
	d.qps[q.qpn] = q
	return q.qpn, nil
}

// DestroyQP removes a QP (in any state) without generating completions.
func (d *Device) DestroyQP(qpn uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	q, err := object(d.qps, "destroy", "QP", qpn)
	if err != nil {
		return err
	}
	d.cqs[q.cfg.SendCQN].refs--
	d.cqs[q.cfg.RecvCQN].refs--
	if q.cfg.SRQN != 0 {
		if s := d.srqs[q.cfg.SRQN]; s != nil {
			s.refs--
		}
	}
	delete(d.qps, qpn)
	return nil
}

// QPAttr carries a QP state transition and the attributes that transition
// sets. Fields not used by the transition are ignored:
//   - RESET->INIT, INIT->INIT: Access (RC/UC), QKey (UD)
//   - INIT->RTR: DestQPN (RC/UC)
//   - RTR->RTS: RNRRetry (0..7, 7 = infinite), RetryCnt (informational)
type QPAttr struct {
	State    QPState
	DestQPN  uint32
	QKey     uint32
	Access   Access
	RNRRetry int
	RetryCnt int
}

// ModifyQP applies a state transition of the RESET->INIT->RTR->RTS machine
// (any state may go to RESET or ERROR; RTS->RTS is allowed). Moving to ERROR
// flushes every outstanding send and receive WQE with WR_FLUSH_ERR
// completions; moving to RESET forgets the queue positions (the driver
// zeroes its doorbell record and indices too).
func (d *Device) ModifyQP(qpn uint32, attr QPAttr) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	q, err := object(d.qps, "modify", "QP", qpn)
	if err != nil {
		return err
	}
	from, to := q.state, attr.State
	valid := false
	switch to {
	case StateReset, StateError:
		valid = true
	case StateInit:
		valid = from == StateReset || from == StateInit
	case StateRTR:
		valid = from == StateInit
	case StateRTS:
		valid = from == StateRTR || from == StateRTS
	}
	if !valid {
		return fmt.Errorf("mlx5emu: modify QP %#x: %v->%v: %w", qpn, from, to, unix.EINVAL)
	}
	switch {
	case to == StateInit:
		q.access = attr.Access
		q.qkey = attr.QKey
	case to == StateRTR:
		if q.cfg.Type != UD {
			q.destQPN = attr.DestQPN & 0xffffff
		}
	case to == StateRTS && from == StateRTR:
		if attr.RNRRetry < 0 || attr.RNRRetry > 7 {
			return fmt.Errorf("mlx5emu: modify QP %#x to RTS: rnr_retry %d: %w", qpn, attr.RNRRetry, unix.EINVAL)
		}
		q.rnrRetry = attr.RNRRetry
		q.retryCnt = attr.RetryCnt
	case to == StateReset:
		q.sqCI, q.rqCI, q.dbLimit, q.rnrUsed, q.warned = 0, 0, 0, 0, false
		for i := range q.shadowIdx {
			q.shadowIdx[i] = -1
		}
	}
	q.state = to
	q.warned = false
	if to == StateError {
		d.flushQP(q)
	}
	return nil
}

// QPState returns the current state of a QP (the emulator moves a QP to
// ERROR by itself after an error completion).
func (d *Device) QPState(qpn uint32) (QPState, error) {
	return read(d, d.qps, "query", "QP", qpn, func(q *qp) QPState { return q.state })
}

// QPStats returns the counters of a QP.
func (d *Device) QPStats(qpn uint32) (QPStats, error) {
	return read(d, d.qps, "stats of", "QP", qpn, func(q *qp) QPStats { return q.stats })
}

func log2(n int) int { return bits.Len(uint(n)) - 1 }
