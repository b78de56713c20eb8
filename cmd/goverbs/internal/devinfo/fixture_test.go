package devinfo

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/golden"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/sysfs"
	"github.com/goverbs/goverbs/cmd/goverbs/internal/verbsdev"
)

// fixture is a Source with fixed models, keyed by device name.
type fixture struct {
	devs   []DeviceID
	models map[string]*Model
	errs   map[string]error
}

func (f fixture) Devices() ([]DeviceID, error) { return f.devs, nil }

func (f fixture) Query(d DeviceID) (*Model, error) {
	if err := f.errs[d.Name]; err != nil {
		return nil, err
	}
	return f.models[d.Name], nil
}

// rxeModel is rxe0 on a Debian 6.1 kernel as the lab captured it (values
// from ibv_devinfo -v), with the GUID derived from veth0's MAC.
func rxeModel(guid uint64) *Model {
	var gid0, gid1 [16]byte
	gid0[0], gid0[1] = 0xfe, 0x80
	for i := 0; i < 8; i++ {
		gid0[8+i] = byte(guid >> (56 - 8*i))
	}
	copy(gid1[10:], []byte{0xff, 0xff, 10, 233, 0, 1})
	return &Model{
		Name:      "rxe0",
		Transport: 0,
		Attr: DeviceAttr{
			FWVer: "0.0.0", NodeGUID: guid, SysImageGUID: guid,
			MaxMRSize: 0xffffffffffffffff, PageSizeCap: 0xfffff000, VendorID: 0xffffff,
			MaxQP: 1048560, MaxQPWR: 1048576, DeviceCapFlags: 0x01223c76,
			MaxSGE: 32, MaxSGERd: 32, MaxCQ: 1048576, MaxCQE: 32767, MaxMR: 524287, MaxPD: 1048576,
			MaxQPRdAtom: 128, MaxResRdAtom: 258048, MaxQPInitRdAtom: 128, AtomicCap: 1,
			MaxMW: 524287, MaxMcastGrp: 8192, MaxMcastQPAttach: 56, MaxTotalMcastQPAttach: 458752,
			MaxAH: 32767, MaxSRQ: 917503, MaxSRQWR: 1048576, MaxSRQSGE: 27, MaxPkeys: 64,
			LocalCAAckDelay: 15, PhysPortCnt: 1, DeviceCapFlagsEx: 0x1223c76,
		},
		NumCompVectors: 1, // the capture ran under TCG, with one vCPU
		Ports: []Port{{
			Attr: PortAttr{
				State: 4, MaxMTU: 5, ActiveMTU: 3, GIDTblLen: 1024, PortCapFlags: 0x10000,
				MaxMsgSz: 0x800000, PkeyTblLen: 1, MaxVLNum: 1, ActiveWidth: 1, ActiveSpeed: 8,
				PhysState: 5, LinkLayer: LinkLayerEthernet,
			},
			GIDs: []GIDEntry{{Index: 0, GID: gid0, Type: GIDTypeRoCEv2}, {Index: 1, GID: gid1, Type: GIDTypeRoCEv2}},
		}},
	}
}

// TestLabCapture renders the model of the lab's rxe0 and compares with what
// the C ibv_devinfo printed in the same boot (testdata/lab).
func TestLabCapture(t *testing.T) {
	lab := filepath.Join(trees, "lab")
	ls := SysfsSource{FS: sysfs.Under(filepath.Join(lab, "tree"))}
	devs, err := ls.Devices()
	if err != nil || len(devs) != 1 {
		t.Fatalf("lab tree devices: %v %v", devs, err)
	}
	guid := verbsdev.NodeGUID(verbsdev.Device{IBDevPath: devs[0].Path})
	src := fixture{devs: devs, models: map[string]*Model{"rxe0": rxeModel(guid)}}
	for name, args := range map[string]string{
		"devinfo": "", "devinfo_-v": "-v", "devinfo_-l": "-l", "devinfo_-d_rxe0": "-d rxe0",
		"devinfo_-d_rxe0_-i_1": "-d rxe0 -i 1", "devinfo_-v_-i_1": "-v -i 1", "devinfo_-d_rxe0_-i_2": "-d rxe0 -i 2",
		"devinfo_-i_2": "-i 2", "devinfo_-i_257": "-i 257", "devinfo_-i_256": "-i 256", "devinfo_-d_foo": "-d foo",
		"devinfo_-i_0": "-i 0", "devinfo_nonroot": "", "devinfo_nonroot_-l": "-l",
	} {
		t.Run(name, func(t *testing.T) {
			golden.CheckRun(t, filepath.Join(lab, "golden", name+".golden"), func(stdout, stderr io.Writer) int {
				return Command{Source: src, Posix: new(bool)}.Run(strings.Fields(args), stdout, stderr)
			})
		})
	}
}
