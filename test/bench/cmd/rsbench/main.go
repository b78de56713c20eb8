// Command rsbench measures goverbs' rsockets against librdmacm's in the lab: rstream's default series (latency
// and bandwidth, 64 B, 4 KiB, 64 KiB and 1 MiB) between goverbs' rstream and rdmacm-utils' rstream on rxe0 —
// C↔C, Go↔Go and the mixed pairs both ways —, and the same series over TCP on the same veth (`-T s`, C↔C and
// Go↔Go). Runs alternate, several repetitions; it prints the median usec/xfer and Gb/sec of each row and the
// ratios Go/C (below 1.00 means goverbs is faster) and rsocket/TCP. C↔C and Go↔Go run once more with
// polling_time 0 in /etc/rdma/rsocket (a tmpfs in the lab), which both librdmacm and goverbs' tools read, to
// show what the 10 µs poll before sleeping buys. No thresholds: a measurement, not a test.
//
// Usage: go run ./test/bench/cmd/rsbench [-reps 3]
//
// On the host it builds goverbs and boots the lab, running itself inside ("-inner").
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"time"

	"github.com/goverbs/goverbs/test/bench/benchlab"
	"github.com/goverbs/goverbs/test/lab"
)

func main() {
	reps := flag.Int("reps", 3, "repetitions of each pair")
	cpus := flag.Int("cpus", 2, "lab VM vCPUs")
	inner, bin := benchlab.Parse()
	if inner {
		os.Exit(measure(bin, *reps))
	}
	os.Exit(benchlab.Host("rsbench", "./test/bench/cmd/rsbench", lab.Config{Timeout: 40 * time.Minute, CPUs: *cpus},
		"-reps", strconv.Itoa(*reps)))
}

// pairKind is one way of running the series: which implementation serves, which connects, over what.
type pairKind struct {
	name            string
	goServer, goCli bool
	tcp             bool // -T s: plain sockets
	noPoll          bool // polling_time 0 in /etc/rdma/rsocket: blocked calls sleep at once
}

var kinds = []pairKind{
	{name: "C<->C"},
	{name: "Go<->Go", goServer: true, goCli: true},
	{name: "Csrv<-Go", goCli: true},
	{name: "Gosrv<-C", goServer: true},
	{name: "TCP C<->C", tcp: true},
	{name: "TCP Go<->Go", goServer: true, goCli: true, tcp: true},
	{name: "C nopoll", noPoll: true},
	{name: "Go nopoll", goServer: true, goCli: true, noPoll: true},
}

// row is one result row of rstream: its name ("64_lat", "1m_bw"), usec/xfer and Gb/sec.
type row struct {
	name       string
	usec, gbps float64
}

// rowRE matches a result row; bytes, xfers, iters and total are printed with size suffixes ("10k", "1m").
var rowRE = regexp.MustCompile(`^(\S+_(?:lat|bw))\s+\S+\s+\S+\s+\S+\s+\S+\s+[0-9.]+s\s+([0-9.]+)\s+([0-9.]+)$`)

func parseRows(out []byte) []row {
	var rows []row
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := rowRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		g, _ := strconv.ParseFloat(m[2], 64)
		u, _ := strconv.ParseFloat(m[3], 64)
		rows = append(rows, row{m[1], u, g})
	}
	return rows
}

// run runs the series once for k on port and returns the client's rows.
func run(bin string, k pairKind, port int) ([]row, error) {
	tool := func(goSide bool) []string {
		if goSide {
			return []string{bin, "rstream"}
		}
		return []string{"rstream"}
	}
	opts := []string{"-p", strconv.Itoa(port)}
	if k.tcp {
		opts = append(opts, "-T", "s")
	}
	if k.noPoll {
		if err := benchlab.SetRsocketConf("polling_time", "0"); err != nil {
			return nil, err
		}
		defer benchlab.SetRsocketConf("polling_time", "")
	}
	sargs := append(append(tool(k.goServer), "-b", benchlab.LabIP), opts...)
	cargs := append(append(tool(k.goCli), "-s", benchlab.LabIP), opts...)
	out, _, err := benchlab.Pair(sargs, cargs, port, !k.tcp)
	if err != nil {
		return nil, err
	}
	rows := parseRows(out)
	if len(rows) == 0 {
		return nil, fmt.Errorf("client %v printed no result rows:\n%s", cargs, out)
	}
	return rows, nil
}

func measure(bin string, reps int) int {
	port := 19800
	unmount, err := benchlab.MountRsocketConf()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rsbench:", err)
		return 1
	}
	defer unmount()
	usec := map[string]map[string][]float64{} // kind -> row -> samples
	gbps := map[string]map[string][]float64{}
	var order []string
	for r := 0; r < reps; r++ {
		for _, k := range kinds {
			port++
			rows, err := run(bin, k, port)
			if err != nil {
				fmt.Fprintf(os.Stderr, "rsbench: %s: %v\n", k.name, err)
				return 1
			}
			if usec[k.name] == nil {
				usec[k.name], gbps[k.name] = map[string][]float64{}, map[string][]float64{}
			}
			for _, x := range rows {
				if r == 0 && k.name == kinds[0].name {
					order = append(order, x.name)
				}
				usec[k.name][x.name] = append(usec[k.name][x.name], x.usec)
				gbps[k.name][x.name] = append(gbps[k.name][x.name], x.gbps)
			}
		}
	}
	fmt.Printf("rstream's series on rxe0 and over TCP on the same veth, %d vCPUs, median of %d alternating runs\n",
		runtime.NumCPU(), reps)
	fmt.Printf("usec/xfer (lower is better); Go/C = Go<->Go / C<->C; RS/TCP = Go<->Go rsocket / Go<->Go TCP;\n" +
		"C np, Go np = nopoll / polling (polling_time 0 vs librdmacm's 10 µs: above 1.00 polling helps)\n")
	fmt.Printf("%-8s", "row")
	for _, k := range kinds {
		fmt.Printf(" %11s", k.name)
	}
	fmt.Printf(" %7s %7s %7s %7s\n", "Go/C", "RS/TCP", "C np", "Go np")
	for _, name := range order {
		fmt.Printf("%-8s", name)
		for _, k := range kinds {
			fmt.Printf(" %11.2f", benchlab.Median(usec[k.name][name]))
		}
		gg, cc, tg := benchlab.Median(usec["Go<->Go"][name]), benchlab.Median(usec["C<->C"][name]), benchlab.Median(usec["TCP Go<->Go"][name])
		fmt.Printf(" %7.2f %7.2f %7.2f %7.2f\n", gg/cc, gg/tg, benchlab.Median(usec["C nopoll"][name])/cc, benchlab.Median(usec["Go nopoll"][name])/gg)
	}
	fmt.Printf("\nGb/sec (higher is better)\n%-8s", "row")
	for _, k := range kinds {
		fmt.Printf(" %11s", k.name)
	}
	fmt.Println()
	for _, name := range order {
		fmt.Printf("%-8s", name)
		for _, k := range kinds {
			fmt.Printf(" %11.2f", benchlab.Median(gbps[k.name][name]))
		}
		fmt.Println()
	}
	fmt.Printf("\nraw usec/xfer per run:\n")
	for _, k := range kinds {
		for _, name := range order {
			fmt.Printf("%-12s %-8s %v\n", k.name, name, usec[k.name][name])
		}
	}
	return 0
}
