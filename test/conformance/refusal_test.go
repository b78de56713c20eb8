package conformance

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goverbs/goverbs/test/labtest"
	"github.com/goverbs/goverbs/uverbs"
)

// TestRefusalsMatchLibibverbs: for each call goverbs refuses on the device under test, libibverbs refuses it
// on the same device with the same errno, and goverbs' refusal is typed: the C side is test/cpeer/refusepeer.c,
// run with sid's libibverbs (rdma-core 65, the newest release; the reference) and with the VM's own (rdma-core
// 44, where it differs the difference is logged, not failed). Each case pairs a C call with its goverbs
// counterpart: thread and parent domains, XRC domains, CQ moderation, an extended CQ with completion
// timestamps or ignoring overruns, an extended QP with TSO, importing the context, a port's effective speed
// (rdma-core 65; absent from the VM's own library), the null MR, the device clock, a QP's rate limit, setting
// and querying a QP's ECE, a receive WQ, an RSS indirection table, device memory, its import and a dma-buf MR
// (goverbs has them for mlx5; on rxe libibverbs refuses each), and the in-order placement hint (an answer, 0 on
// rxe, not an errno). Where C says EOPNOTSUPP, goverbs' error matches both uverbs.ErrNotSupported and
// unix.EOPNOTSUPP. The cases named "c:..." are calls goverbs has no counterpart for (counters, flow actions,
// completion counters): the test asserts libibverbs refuses each on the device, the fact docs/api-coverage.md's
// "not yet" (or "refused") rests on.
func TestRefusalsMatchLibibverbs(t *testing.T) {
	e := newEnv(t)
	labtest.RequireRoot(t)
	bin := labtest.BuildCPeer(t, "refusepeer", "dl")
	eras := map[string][]string{}
	for _, era := range []string{"sid", "own"} {
		var cmd *exec.Cmd
		if era == "sid" {
			root := labtest.PeerRoot(t, "sid")
			b, err := os.ReadFile(bin)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(root, "tmp", "refusepeer"), b, 0o755))
			cmd = exec.Command("/tmp/refusepeer", e.ctx.Name())
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			cmd.Dir = "/"
		} else {
			cmd = exec.Command(bin, e.ctx.Name())
		}
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "refusepeer (%s libibverbs):\n%s", era, out)
		eras[era] = strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	pd := e.pd()
	cq := e.cq(16)
	goErr := map[string]func() error{
		"alloc_td": func() error { return closed(e.ctx.AllocTD()) },
		"alloc_parent_domain": func() error {
			return closed(e.ctx.AllocParentDomain(uverbs.ParentDomainAttr{PD: pd}))
		},
		"open_xrcd": func() error { return closed(e.ctx.OpenXRCD(-1, uverbs.XRCDCreate)) },
		"modify_cq": func() error { return cq.Moderate(uverbs.CQModeration{Count: 1, Period: 1}) },
		"create_cq_ex_timestamp": func() error {
			return closed(e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 16, WCFlags: uverbs.WCStandardFlags | uverbs.WCExWithCompletionTimestamp}))
		},
		"create_cq_ex_ignore_overrun": func() error {
			return closed(e.ctx.CreateCQEx(uverbs.CQExAttr{CQE: 16, WCFlags: uverbs.WCStandardFlags, Flags: uverbs.CQIgnoreOverrun}))
		},
		"create_qp_ex_tso": func() error {
			return closed(pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq, SendOps: uverbs.SendOpTSO,
				Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}}))
		},
		"import_device": func() error { return closed(uverbs.ImportContext(e.ctx.FD())) },
		"query_port_speed": func() error {
			_, err := e.ctx.QueryPortSpeed(e.pnum)
			return err
		},
		"alloc_null_mr": func() error { return closed(pd.AllocNullMR()) },
		"query_rt_values_ex": func() error {
			_, err := e.ctx.QueryRTValues()
			return err
		},
		// The C side asks on one RC QP in RESET: rate 1000 kbit/s, ECE of vendor 0x15b3 with no options.
		"modify_qp_rate_limit": func() error {
			return onQP(t, pd, cq, func(qp *uverbs.QP) error { return qp.SetRateLimit(uverbs.RateLimit{Rate: 1000}) })
		},
		"set_ece": func() error {
			return onQP(t, pd, cq, func(qp *uverbs.QP) error { return qp.SetECE(uverbs.ECE{VendorID: uverbs.VendorMellanox}) })
		},
		// The C side: a WQ of 4 WRs of 1 SGE on the CQ; a table of no WQs (log size 0, no array: the provider's
		// op is asked for first, so the arguments are never looked at).
		"create_wq": func() error {
			return closed(pd.CreateWQ(uverbs.WQInitAttr{Type: uverbs.WQTypeRQ, MaxWR: 4, MaxSGE: 1, CQ: cq}))
		},
		"create_rwq_ind_table": func() error { return closed(e.ctx.CreateRWQIndTable(nil)) },
		// The C side: 4096 bytes of device memory; the import of DM handle 0; a dma-buf MR of 4096 bytes from 0
		// of fd -1 at IOVA 0 with LOCAL_WRITE (the provider's op is asked first, so no argument is looked at).
		"alloc_dm":  func() error { return closed(e.ctx.AllocDM(uverbs.DMAttr{Length: 4096})) },
		"import_dm": func() error { return closed(e.ctx.ImportDM(0)) },
		"reg_dmabuf_mr": func() error {
			return closed(pd.RegDmabufMR(0, 4096, 0, -1, uverbs.AccessLocalWrite))
		},
		"query_ece": func() error {
			return onQP(t, pd, cq, func(qp *uverbs.QP) error {
				_, err := qp.QueryECE()
				return err
			})
		},
	}
	goAnswer := map[string]func() int{
		"query_qp_data_in_order": func() int {
			qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
				Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
			require.NoError(t, err)
			defer qp.Close()
			return int(qp.DataInOrder(uverbs.WRRDMAWrite))
		},
	}
	seen, cOnly := 0, 0
	for _, ln := range eras["sid"] {
		f := strings.Fields(ln)
		require.Len(t, f, 2, "refusepeer line %q", ln)
		name := f[0]
		want, err := strconv.Atoi(f[1])
		require.NoError(t, err, "refusepeer line %q", ln)
		seen++
		t.Run(name, func(t *testing.T) {
			if own := ownAnswer(eras["own"], name); own != f[1] {
				t.Logf("rdma-core 44 answers %s, rdma-core 65 %d", own, want)
			}
			if strings.HasPrefix(name, "c:") { // no goverbs counterpart yet: the fact "not yet" rests on
				require.NotZero(t, want, "libibverbs does %s on this device: the coverage table's reason no longer holds", name)
				cOnly++
				t.Logf("libibverbs refuses: %v", unix.Errno(want))
				return
			}
			if a, ok := goAnswer[name]; ok {
				require.Equal(t, want, a(), "libibverbs answers %d", want)
				return
			}
			g, ok := goErr[name]
			require.True(t, ok, "no goverbs counterpart for %s", name)
			err := g()
			if want == 0 {
				require.NoError(t, err, "libibverbs succeeds")
				return
			}
			require.Error(t, err, "libibverbs refuses with %v", unix.Errno(want))
			require.ErrorIs(t, err, unix.Errno(want), "libibverbs refuses with %v; goverbs: %v", unix.Errno(want), err)
			if unix.Errno(want) == unix.EOPNOTSUPP {
				require.ErrorIs(t, err, uverbs.ErrNotSupported)
			}
			t.Logf("both refuse: %v", err)
		})
	}
	require.Equal(t, len(goErr)+len(goAnswer)+cOnly, seen, "cases compared")
	require.NotZero(t, cOnly, "no libibverbs-only cases")
}

// onQP runs f on a new RC QP (in RESET) and closes the QP.
func onQP(t *testing.T, pd *uverbs.PD, cq *uverbs.CQ, f func(*uverbs.QP) error) error {
	qp, err := pd.CreateQP(uverbs.QPInitAttr{Type: uverbs.QPTypeRC, SendCQ: cq, RecvCQ: cq,
		Cap: uverbs.QPCap{MaxSendWR: 4, MaxRecvWR: 4, MaxSendSGE: 1, MaxRecvSGE: 1}})
	require.NoError(t, err)
	defer qp.Close()
	return f(qp)
}

func ownAnswer(lines []string, name string) string {
	for _, ln := range lines {
		if f := strings.Fields(ln); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return "nothing"
}

// closed closes what a constructor made, and returns its error.
func closed[T interface{ Close() error }](o T, err error) error {
	if err != nil {
		return err
	}
	return errors.Join(o.Close())
}
