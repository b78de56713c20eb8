package devices_test

import (
	"os"

	"github.com/goverbs/goverbs/cmd/goverbs/internal/devices"
)

func ExampleRender() {
	devices.Render(os.Stdout, []devices.Entry{{Name: "rxe0", NodeGUID: 0x0042acfffe110002}})
	// Output:
	//     device          	   node GUID
	//     ------          	----------------
	//     rxe0            	0042acfffe110002
}
