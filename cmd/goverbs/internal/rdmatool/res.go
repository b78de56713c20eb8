package rdmatool

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goverbs/goverbs/abi"
	"github.com/goverbs/goverbs/netlinkrdma"
)

func (t *tool) resHelp() int {
	t.outf("Usage: %s resource\n", progName)
	for _, l := range []string{
		"resource show [DEV]",
		"resource show [qp|cm_id|pd|mr|cq|ctx|srq|frmr_pools]",
		"resource show qp link [DEV/PORT]",
		"resource show qp link [DEV/PORT] [FILTER-NAME FILTER-VALUE]",
		"resource show cm_id link [DEV/PORT]",
		"resource show cm_id link [DEV/PORT] [FILTER-NAME FILTER-VALUE]",
		"resource show cq dev [DEV]",
		"resource show cq dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show pd dev [DEV]",
		"resource show pd dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show mr dev [DEV]",
		"resource show mr dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show ctx dev [DEV]",
		"resource show ctx dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show srq dev [DEV]",
		"resource show srq dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource show frmr_pools dev [DEV]",
		"resource show frmr_pools dev [DEV] [FILTER-NAME FILTER-VALUE]",
		"resource set frmr_pools dev DEV aging AGING_PERIOD",
		"resource set frmr_pools dev DEV pinned POOL_KEY PINNED_VALUE",
	} {
		t.outf("          %s\n", l)
	}
	return 0
}

func (t *tool) cmdRes() int {
	return t.execCmd([]command{
		{"", t.resShow},
		{"show", t.resShow},
		{"set", t.resSet},
		{"list", t.resShow},
		{"help", t.resHelp},
	}, "resource command")
}

func (t *tool) resShow() int {
	summary := resFunc{strict: true, dump: t.resSummaryOne}
	// "rdma resource show DEV"
	if len(t.args) == 1 && t.devMapLookup(false) != nil {
		return t.execDev(summary.inner(t))
	}
	return t.execCmd([]command{
		{"", func() int { return t.resRun(summary) }},
		{"qp", func() int { return t.resRun(t.qpFunc()) }},
		{"cm_id", func() int { return t.resRun(t.cmIDFunc()) }},
		{"cq", func() int { return t.resRun(t.cqFunc()) }},
		{"mr", func() int { return t.resRun(t.mrFunc()) }},
		{"pd", func() int { return t.resRun(t.pdFunc()) }},
		{"ctx", func() int { return t.resRun(t.ctxFunc()) }},
		{"srq", func() int { return t.resRun(t.srqFunc()) }},
		{"frmr_pools", func() int { return t.resRun(t.frmrPoolsFunc()) }},
	}, "parameter")
}

// resFunc describes one resource listing (iproute2's RES_FUNC).
type resFunc struct {
	valid  []filterSpec
	strict bool // per device (rd_exec_dev) rather than per port
	// doit prints the one object named by a doit-able filter; nil when the
	// object has no such filter.
	doit func(id uint32) int
	dump func() int
}

func (rf resFunc) inner(t *tool) func() int {
	return func() int {
		if rf.doit != nil {
			if id, ok := t.doitIndex(); ok {
				// As iproute2: try the single-object request quietly and
				// fall back to a dump on old kernels; errors stay quiet.
				t.suppressErrors = true
				if ret := rf.doit(id); ret == 0 || t.raw {
					return ret
				}
			}
		}
		return rf.dump()
	}
}

func (t *tool) resRun(rf resFunc) int {
	if ret := t.buildFilters(rf.valid); ret != 0 {
		return ret
	}
	if rf.valid != nil {
		if ret := t.setArgToDevname(); ret != 0 {
			return ret
		}
	}
	if rf.strict {
		return t.execDev(rf.inner(t))
	}
	return t.execLink(rf.inner(t), false)
}

func (t *tool) query(rawCapable bool) netlinkrdma.ResQuery {
	return netlinkrdma.ResQuery{DevIndex: t.devIdx, Port: t.portIdx, Raw: rawCapable && t.raw}
}

func (t *tool) resSummaryOne() int {
	s, err := t.be.ResourceSummary(t.devIdx)
	if err != nil {
		return t.nlError(err)
	}
	p := t.p
	p.openObject("")
	p.uint(printAny, "ifindex", "%d: ", s.DevIndex)
	p.str(printAny, "ifname", "%s: ", s.DevName)
	for _, c := range s.Counts {
		if !c.HasMax {
			t.resU64(c.Name, c.Current, true)
			continue
		}
		// iproute2 7.3: "NAME CURR/MAX " in text, NAME and NAME-max in JSON.
		p.u64(printJSON, c.Name, "", c.Current)
		p.u64(printJSON, c.Name+"-max", "", c.Max)
		p.textf("%s %d/%d ", c.Name, c.Current, c.Max)
	}
	p.newline()
	return 0
}

// resU32 is res_print_u32: "NAME VALUE " in text, a number in JSON.
func (t *tool) resU32(name string, v uint32, present bool) {
	if !present {
		return
	}
	t.p.uint(printAny, name, "", v)
	t.p.text(name)
	t.p.textf(" %d ", v)
}

// resU64 is res_print_u64.
func (t *tool) resU64(name string, v uint64, present bool) {
	if !present {
		return
	}
	t.p.u64(printAny, name, "", v)
	t.p.text(name)
	t.p.textf(" %d ", v)
}

// printKey is print_key: "NAME 0xHEX " in text, a hex string in JSON. Like
// iproute2 it prints only the low 32 bits.
func (t *tool) printKey(name string, v uint64, present bool) {
	if !present {
		return
	}
	t.p.text(name)
	t.p.hex(printAny, name, " 0x%x ", uint32(v))
}

// comm returns the process name iproute2 shows for a resource: the task's
// comm for user objects, the kernel owner's name otherwise.
func (t *tool) comm(r *netlinkrdma.ResBase) (string, bool) {
	if r.Present.Has(abi.RDMA_NLDEV_ATTR_RES_PID) {
		return t.taskName(r.PID)
	}
	if r.Present.Has(abi.RDMA_NLDEV_ATTR_RES_KERN_NAME) {
		return r.KernelName, true
	}
	return "", false
}

// printComm is print_comm: kernel owners are bracketed in text.
func (t *tool) printComm(r *netlinkrdma.ResBase, comm string, ok bool) {
	if !ok {
		return
	}
	if !r.Present.Has(abi.RDMA_NLDEV_ATTR_RES_PID) && !t.p.json {
		comm = "[" + comm + "]"
	}
	if len(comm) > 17 {
		comm = comm[:17]
	}
	t.p.str(printAny, "comm", "comm %s ", comm)
}

// printOwner prints a resource's pid (when the kernel sent one) and its comm.
func (t *tool) printOwner(r *netlinkrdma.ResBase, comm string, ok bool) {
	t.resU32("pid", r.PID, r.Present.Has(abi.RDMA_NLDEV_ATTR_RES_PID))
	t.printComm(r, comm, ok)
}

// endResLine ends a resource line as most of them end: the owner, the driver's attributes (-dd), the newline.
func (t *tool) endResLine(r *netlinkrdma.ResBase, comm string, ok bool) int {
	t.printOwner(r, comm, ok)
	t.printDriverTable(r)
	t.p.newline()
	return 0
}

func (t *tool) printDev(r *netlinkrdma.ResBase) {
	t.p.int(printAny, "ifindex", "", int64(int32(r.DevIndex)))
	t.p.str(printAny, "ifname", "dev %s ", r.DevName)
}

func (t *tool) printLink(r *netlinkrdma.ResBase, port uint32) {
	t.p.uint(printJSON, "ifindex", "", r.DevIndex)
	t.p.str(printAny, "ifname", "", r.DevName)
	tmp := r.DevName + "/-"
	if r.Present.Has(abi.RDMA_NLDEV_ATTR_PORT_INDEX) {
		t.p.uint(printAny, "port", "", port)
		tmp = fmt.Sprintf("%s/%d", r.DevName, int32(port))
	}
	if !t.p.json {
		t.p.str(printAny, "", "link %s ", tmp)
	}
}

// printDriverTable prints driver-specific attributes (with -dd only).
func (t *tool) printDriverTable(r *netlinkrdma.ResBase) {
	if !t.driverDetails || !r.Present.Has(abi.RDMA_NLDEV_ATTR_DRIVER) {
		return
	}
	p := t.p
	p.newlineIndent()
	cc := 0
	for _, d := range r.Driver {
		if cc > 80 {
			p.newlineIndent()
			cc = 0
		}
		key := "drv_" + d.Key
		var s string
		switch d.Kind {
		case netlinkrdma.DriverString:
			p.str(printAny, key, "", d.Str)
			p.text(key)
			p.textf(" %s ", d.Str)
			continue
		case netlinkrdma.DriverS32, netlinkrdma.DriverS64:
			if d.Hex {
				s = fmt.Sprintf("%s 0x%x ", key, uint64(d.Int)&mask(d.Kind))
			} else {
				s = fmt.Sprintf("%s %d ", key, d.Int)
			}
			p.int(printJSON, key, "", int64(int32(d.Int)))
		case netlinkrdma.DriverU32, netlinkrdma.DriverU64:
			if d.Hex {
				s = fmt.Sprintf("%s 0x%x ", key, d.Uint)
			} else {
				s = fmt.Sprintf("%s %d ", key, d.Uint)
			}
			p.int(printJSON, key, "", int64(int32(d.Uint)))
		}
		if !p.json {
			p.text(s)
			cc += len(s)
		}
	}
}

func mask(k netlinkrdma.DriverAttrKind) uint64 {
	if k == netlinkrdma.DriverS32 {
		return 0xffffffff
	}
	return ^uint64(0)
}

// printRawData prints a raw object dump (with -r): the bytes as decimal
// numbers run together in text, an array "data" in JSON.
func (t *tool) printRawData(r *netlinkrdma.ResBase) {
	if !t.raw {
		return
	}
	t.p.openArray(printJSON, "data", "")
	for _, b := range r.Raw {
		t.p.uint(printAny, "", "%d", uint32(b))
	}
	t.p.closeArray(printAny, ">")
}

var errNoRaw = errors.New("reply lacks the raw object dump")

// rawLine prints a RES_*_GET_RAW entry.
func (t *tool) rawLine(r *netlinkrdma.ResBase, link bool) int {
	if !r.Present.Has(abi.RDMA_NLDEV_ATTR_RES_RAW) {
		return t.nlError(errNoRaw)
	}
	t.p.openObject("")
	if link {
		t.printLink(r, t.portIdx)
	} else {
		t.printDev(r)
	}
	t.printRawData(r)
	t.p.newline()
	return 0
}

// each runs line over entries until one fails.
func each[T any](entries []T, line func(*T) int) int {
	for i := range entries {
		if ret := line(&entries[i]); ret != 0 {
			return ret
		}
	}
	return 0
}

// listing builds a resFunc's dump and doit from the backend calls.
func listing[T any](t *tool, list func() ([]T, error), one func(uint32) (T, error), line func(*T) int) (func() int, func(uint32) int) {
	dump := func() int {
		vs, err := list()
		if err != nil {
			return t.nlError(err)
		}
		return each(vs, line)
	}
	doit := func(id uint32) int {
		v, err := one(id)
		if err != nil {
			return t.nlError(err)
		}
		return line(&v)
	}
	return dump, doit
}

func (t *tool) qpFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.QP, error) { return t.be.QPs(t.query(true)) },
		func(id uint32) (netlinkrdma.QP, error) { return t.be.QP(t.query(true), id) },
		t.qpLine)
	return resFunc{valid: []filterSpec{
		{"link", false, false}, {"lqpn", true, true}, {"rqpn", true, false}, {"pid", true, false},
		{"sq-psn", true, false}, {"rq-psn", true, false}, {"type", false, false},
		{"path-mig-state", false, false}, {"state", false, false}, {"pdn", true, false},
	}, dump: dump, doit: doit}
}

func (t *tool) qpLine(q *netlinkrdma.QP) int {
	if t.raw {
		return t.rawLine(&q.ResBase, true)
	}
	has := q.Present.Has
	if q.Port != t.portIdx {
		return 0
	}
	if t.filtered("lqpn", q.LQPN, has(abi.RDMA_NLDEV_ATTR_RES_LQPN)) ||
		t.filtered("pdn", q.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN)) ||
		t.filtered("rqpn", q.RQPN, has(abi.RDMA_NLDEV_ATTR_RES_RQPN)) ||
		t.filtered("rq-psn", q.RQPSN, has(abi.RDMA_NLDEV_ATTR_RES_RQ_PSN)) ||
		t.filtered("sq-psn", q.SQPSN, has(abi.RDMA_NLDEV_ATTR_RES_SQ_PSN)) ||
		t.strFiltered("path-mig-state", q.PathMigState.String()) ||
		t.strFiltered("type", qpTypeName(q.Type)) ||
		t.strFiltered("state", ipName(q.State)) {
		return 0
	}
	comm, ok := t.comm(&q.ResBase)
	if t.filtered("pid", q.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printLink(&q.ResBase, q.Port)
	t.resU32("lqpn", q.LQPN, has(abi.RDMA_NLDEV_ATTR_RES_LQPN))
	if has(abi.RDMA_NLDEV_ATTR_RES_RQPN) {
		p.uint(printAny, "rqpn", "rqpn %d ", q.RQPN)
	}
	p.str(printAny, "type", "type %s ", qpTypeName(q.Type))
	p.str(printAny, "state", "state %s ", ipName(q.State))
	if has(abi.RDMA_NLDEV_ATTR_RES_RQ_PSN) {
		p.uint(printAny, "rq-psn", "rq-psn %d ", q.RQPSN)
	}
	t.resU32("sq-psn", q.SQPSN, has(abi.RDMA_NLDEV_ATTR_RES_SQ_PSN))
	if has(abi.RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE) {
		p.str(printAny, "path-mig-state", "path-mig-state %s ", q.PathMigState.String())
	}
	t.resU32("pdn", q.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN))
	return t.endResLine(&q.ResBase, comm, ok)
}

func (t *tool) cqFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.CQ, error) { return t.be.CQs(t.query(true)) },
		func(id uint32) (netlinkrdma.CQ, error) { return t.be.CQ(t.query(true), id) },
		t.cqLine)
	return resFunc{valid: []filterSpec{
		{"dev", false, false}, {"users", true, false}, {"poll-ctx", false, false}, {"pid", true, false},
		{"cqn", true, true}, {"ctxn", true, false},
	}, strict: true, dump: dump, doit: doit}
}

func (t *tool) cqLine(q *netlinkrdma.CQ) int {
	if t.raw {
		return t.rawLine(&q.ResBase, false)
	}
	has := q.Present.Has
	if t.filtered("users", uint32(q.Users), has(abi.RDMA_NLDEV_ATTR_RES_USECNT)) ||
		t.strFiltered("poll-ctx", q.PollCtx.String()) {
		return 0
	}
	comm, ok := t.comm(&q.ResBase)
	if t.filtered("pid", q.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("cqn", q.CQN, has(abi.RDMA_NLDEV_ATTR_RES_CQN)) ||
		t.filtered("ctxn", q.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&q.ResBase)
	t.resU32("cqn", q.CQN, has(abi.RDMA_NLDEV_ATTR_RES_CQN))
	t.resU32("cqe", q.CQE, has(abi.RDMA_NLDEV_ATTR_RES_CQE))
	t.resU64("users", q.Users, has(abi.RDMA_NLDEV_ATTR_RES_USECNT))
	if has(abi.RDMA_NLDEV_ATTR_RES_POLL_CTX) {
		p.str(printAny, "poll-ctx", "poll-ctx %s ", q.PollCtx.String())
	}
	if q.AdaptiveModeration != nil {
		p.onOff(printAny, "adaptive-moderation", "adaptive-moderation %s ", *q.AdaptiveModeration)
	}
	t.resU32("ctxn", q.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN))
	return t.endResLine(&q.ResBase, comm, ok)
}

func (t *tool) mrFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.MR, error) { return t.be.MRs(t.query(true)) },
		func(id uint32) (netlinkrdma.MR, error) { return t.be.MR(t.query(true), id) },
		t.mrLine)
	return resFunc{valid: []filterSpec{
		{"dev", false, false}, {"rkey", true, false}, {"lkey", true, false}, {"mrlen", true, false},
		{"pid", true, false}, {"mrn", true, true}, {"pdn", true, false},
	}, strict: true, dump: dump, doit: doit}
}

func (t *tool) mrLine(m *netlinkrdma.MR) int {
	if t.raw {
		return t.rawLine(&m.ResBase, false)
	}
	has := m.Present.Has
	if t.filtered("mrlen", uint32(m.Length), has(abi.RDMA_NLDEV_ATTR_RES_MRLEN)) {
		return 0
	}
	comm, ok := t.comm(&m.ResBase)
	if t.filtered("pid", m.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("mrn", m.MRN, has(abi.RDMA_NLDEV_ATTR_RES_MRN)) ||
		t.filtered("pdn", m.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&m.ResBase)
	t.resU32("mrn", m.MRN, has(abi.RDMA_NLDEV_ATTR_RES_MRN))
	t.printKey("rkey", uint64(m.RKey), has(abi.RDMA_NLDEV_ATTR_RES_RKEY))
	t.printKey("lkey", uint64(m.LKey), has(abi.RDMA_NLDEV_ATTR_RES_LKEY))
	t.printKey("iova", m.IOVA, has(abi.RDMA_NLDEV_ATTR_RES_IOVA))
	t.resU64("mrlen", m.Length, has(abi.RDMA_NLDEV_ATTR_RES_MRLEN))
	t.resU32("pdn", m.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN))
	t.printOwner(&m.ResBase, comm, ok)
	t.printDriverTable(&m.ResBase)
	t.printRawData(&m.ResBase)
	p.newline()
	return 0
}

func (t *tool) pdFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.PD, error) { return t.be.PDs(t.query(false)) },
		func(id uint32) (netlinkrdma.PD, error) { return t.be.PD(t.query(false), id) },
		t.pdLine)
	return resFunc{valid: []filterSpec{
		{"dev", false, false}, {"users", true, false}, {"pid", true, false}, {"ctxn", true, false},
		{"pdn", true, true}, {"ctxn", true, false},
	}, strict: true, dump: dump, doit: doit}
}

func (t *tool) pdLine(d *netlinkrdma.PD) int {
	has := d.Present.Has
	if t.filtered("users", uint32(d.Users), has(abi.RDMA_NLDEV_ATTR_RES_USECNT)) {
		return 0
	}
	comm, ok := t.comm(&d.ResBase)
	if t.filtered("pid", d.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("ctxn", d.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN)) ||
		t.filtered("pdn", d.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&d.ResBase)
	t.resU32("pdn", d.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN))
	t.printKey("local_dma_lkey", uint64(d.LocalDMALKey), has(abi.RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY))
	t.resU64("users", d.Users, has(abi.RDMA_NLDEV_ATTR_RES_USECNT))
	t.printKey("unsafe_global_rkey", uint64(d.UnsafeGlobalRKey), has(abi.RDMA_NLDEV_ATTR_RES_UNSAFE_GLOBAL_RKEY))
	t.resU32("ctxn", d.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN))
	return t.endResLine(&d.ResBase, comm, ok)
}

func (t *tool) ctxFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.Context, error) { return t.be.Contexts(t.query(false)) },
		func(id uint32) (netlinkrdma.Context, error) { return t.be.Context(t.query(false), id) },
		t.ctxLine)
	return resFunc{valid: []filterSpec{{"dev", false, false}, {"pid", true, false}, {"ctxn", true, true}},
		strict: true, dump: dump, doit: doit}
}

func (t *tool) ctxLine(x *netlinkrdma.Context) int {
	has := x.Present.Has
	comm, ok := t.comm(&x.ResBase)
	if t.filtered("pid", x.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("ctxn", x.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&x.ResBase)
	t.resU32("ctxn", x.CTXN, has(abi.RDMA_NLDEV_ATTR_RES_CTXN))
	return t.endResLine(&x.ResBase, comm, ok)
}

func (t *tool) srqFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.SRQ, error) { return t.be.SRQs(t.query(true)) },
		func(id uint32) (netlinkrdma.SRQ, error) { return t.be.SRQ(t.query(true), id) },
		t.srqLine)
	return resFunc{valid: []filterSpec{
		{"dev", false, false}, {"pid", true, false}, {"srqn", true, true}, {"type", false, false},
		{"pdn", true, false}, {"cqn", true, false}, {"lqpn", true, false},
	}, strict: true, dump: dump, doit: doit}
}

// maxQPStr is the size of iproute2's SRQ QP list buffer, NUL included.
const maxQPStr = 256

// srqQPs renders the QP numbers of an SRQ after the lqpn filter
// (get_srq_qps); ok is false when the SRQ is to be skipped.
func (t *tool) srqQPs(s *netlinkrdma.SRQ) (string, bool) {
	if !s.QPsPresent {
		return "", false
	}
	if len(s.QPs) == 0 {
		return "", !t.keyExists("lqpn")
	}
	var b strings.Builder
	delim := ""
	add := func(x string) {
		if room := maxQPStr - 1 - b.Len(); room > 0 {
			if len(x) > room {
				x = x[:room]
			}
			b.WriteString(x)
		}
	}
	for _, r := range s.QPs {
		if !r.Range {
			if t.filtered("lqpn", r.Min, true) {
				continue
			}
			add(fmt.Sprintf("%s%d", delim, int32(r.Min)))
			delim = ","
			continue
		}
		var lo, hi uint32
		flush := func() {
			if hi == 0 {
				add(fmt.Sprintf("%s%d", delim, int32(lo)))
			} else {
				add(fmt.Sprintf("%s%d-%d", delim, int32(lo), int32(hi)))
			}
			delim = ","
			lo, hi = 0, 0
		}
		for qpn := r.Min; qpn <= r.Max; qpn++ {
			if t.filtered("lqpn", qpn, true) {
				if lo != 0 {
					flush()
				}
			} else if lo == 0 {
				lo = qpn
			} else {
				hi = qpn
			}
			if qpn == ^uint32(0) {
				break
			}
		}
		if lo != 0 {
			flush()
		}
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}

func (t *tool) srqLine(s *netlinkrdma.SRQ) int {
	if t.raw {
		return t.rawLine(&s.ResBase, false)
	}
	has := s.Present.Has
	comm, ok := t.comm(&s.ResBase)
	if t.filtered("pid", s.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("srqn", s.SRQN, has(abi.RDMA_NLDEV_ATTR_RES_SRQN)) ||
		t.strFiltered("type", s.Type.String()) ||
		t.filtered("pdn", s.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN)) ||
		t.filtered("cqn", s.CQN, has(abi.RDMA_NLDEV_ATTR_RES_CQN)) {
		return 0
	}
	qps, show := t.srqQPs(s)
	if !show {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printDev(&s.ResBase)
	t.resU32("srqn", s.SRQN, has(abi.RDMA_NLDEV_ATTR_RES_SRQN))
	p.str(printAny, "type", "type %s ", s.Type.String())
	if qps != "" {
		p.openArray(printAny, "lqpn", "lqpn")
		p.text(" ")
		for i, q := range strings.Split(qps, ",") {
			if q == "" {
				continue
			}
			if i > 0 {
				p.text(",")
			}
			p.str(printAny, "", "%s", q)
		}
		p.text(" ")
		p.closeArray(printJSON, "")
	}
	t.resU32("pdn", s.PDN, has(abi.RDMA_NLDEV_ATTR_RES_PDN))
	t.resU32("cqn", s.CQN, has(abi.RDMA_NLDEV_ATTR_RES_CQN))
	return t.endResLine(&s.ResBase, comm, ok)
}

func (t *tool) cmIDFunc() resFunc {
	dump, doit := listing(t,
		func() ([]netlinkrdma.CMID, error) { return t.be.CMIDs(t.query(false)) },
		func(id uint32) (netlinkrdma.CMID, error) { return t.be.CMID(t.query(false), id) },
		t.cmIDLine)
	return resFunc{valid: []filterSpec{
		{"link", false, false}, {"lqpn", true, false}, {"qp-type", false, false}, {"state", false, false},
		{"ps", false, false}, {"dev-type", false, false}, {"transport-type", false, false},
		{"pid", true, false}, {"src-addr", false, false}, {"src-port", true, false},
		{"dst-addr", false, false}, {"dst-port", true, false}, {"cm-idn", true, true},
	}, dump: dump, doit: doit}
}

func (t *tool) cmIDLine(m *netlinkrdma.CMID) int {
	has := m.Present.Has
	if m.Port != 0 && m.Port != t.portIdx {
		return 0
	}
	if t.filtered("lqpn", m.LQPN, has(abi.RDMA_NLDEV_ATTR_RES_LQPN)) ||
		t.strFiltered("qp-type", qpTypeName(m.Type)) ||
		t.strFiltered("ps", psName(m.PortSpace)) ||
		t.strFiltered("state", m.State.String()) {
		return 0
	}
	var src, dst string
	if has(abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR) {
		if !m.SrcAddr.IsValid() {
			return 0
		}
		src = m.SrcAddr.Addr().String()
	}
	if t.strFiltered("src-addr", src) ||
		t.filtered("src-port", uint32(m.SrcAddr.Port()), has(abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR)) {
		return 0
	}
	if has(abi.RDMA_NLDEV_ATTR_RES_DST_ADDR) {
		if !m.DstAddr.IsValid() {
			return 0
		}
		dst = m.DstAddr.Addr().String()
	}
	if t.strFiltered("dst-addr", dst) ||
		t.filtered("dst-port", uint32(m.DstAddr.Port()), has(abi.RDMA_NLDEV_ATTR_RES_DST_ADDR)) {
		return 0
	}
	comm, ok := t.comm(&m.ResBase)
	if t.filtered("pid", m.PID, has(abi.RDMA_NLDEV_ATTR_RES_PID)) ||
		t.filtered("cm-idn", m.CMIDN, has(abi.RDMA_NLDEV_ATTR_RES_CM_IDN)) {
		return 0
	}
	p := t.p
	p.openObject("")
	t.printLink(&m.ResBase, m.Port)
	t.resU32("cm-idn", m.CMIDN, has(abi.RDMA_NLDEV_ATTR_RES_CM_IDN))
	t.resU32("lqpn", m.LQPN, has(abi.RDMA_NLDEV_ATTR_RES_LQPN))
	if has(abi.RDMA_NLDEV_ATTR_RES_TYPE) {
		p.str(printAny, "qp-type", "qp-type %s ", qpTypeName(m.Type))
	}
	p.str(printAny, "state", "state %s ", m.State.String())
	p.str(printAny, "ps", "ps %s ", psName(m.PortSpace))
	t.printOwner(&m.ResBase, comm, ok)
	for _, a := range []struct {
		key     string
		present bool
		addr    string
		port    uint16
	}{
		{"src-addr", has(abi.RDMA_NLDEV_ATTR_RES_SRC_ADDR), src, m.SrcAddr.Port()},
		{"dst-addr", has(abi.RDMA_NLDEV_ATTR_RES_DST_ADDR), dst, m.DstAddr.Port()},
	} {
		if !a.present {
			continue
		}
		p.str(printAny, a.key, "", fmt.Sprintf("%s:%d", a.addr, a.port))
		p.text(a.key)
		p.textf(" %s:", a.addr)
		p.textf("%d ", a.port)
	}
	t.printDriverTable(&m.ResBase)
	p.newline()
	return 0
}
