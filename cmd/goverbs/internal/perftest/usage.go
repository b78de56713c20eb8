package perftest

import (
	"fmt"
	"io"
)

// usage prints perftest 6.24's usage() for this test as Debian's build (sid and trixie, perftest 25.01.0+0.80)
// compiles it: DC streams, AES-XTS, hnsdv congestion types, thread domains (--no_lock), out-of-order receive
// WRs (--no_ddp), SRD unsolicited writes, ODP and relaxed ordering in; --use_ooo and the accelerator memory
// types (CUDA, ROCm, Neuron, Habana, MLU) out. goverbs' own --no_progress is accepted but, like every option
// 6.24 does not print, not listed.
func usage(w io.Writer, prog string, p *Params) {
	pr := func(s string) { io.WriteString(w, s) }
	verb, bw, lat := p.Verb, p.Kind == KindBW, p.Kind == KindLat
	write := verb == VerbWrite // WRITE or WRITE_IMM
	fmt.Fprintf(w, "Usage:\n")
	fmt.Fprintf(w, "  %s            start a server and wait for connection\n", prog)
	fmt.Fprintf(w, "  %s <host>     connect to server at <host>\n", prog)
	pr("\nOptions:\n")
	if verb != VerbAtomic {
		pr("  -a, --all  Run sizes from 2 till 2^23\n")
	}
	if verb == VerbAtomic {
		pr("  -A, --atomic_type=<type>  type of atomic operation from {CMP_AND_SWAP,FETCH_AND_ADD} (default FETCH_AND_ADD)\n")
	}
	if bw {
		pr("  -b, --bidirectional  Measure bidirectional bandwidth (default unidirectional)\n")
	}
	switch verb {
	case VerbSend:
		pr("  -c, --connection=<RC/XRC/UC/UD/DC/SRD>  Connection type RC/XRC/UC/UD/DC/SRD (default RC)\n")
	case VerbWrite:
		pr("  -c, --connection=<RC/XRC/UC/DC>  Connection type RC/XRC/UC/DC (default RC)\n")
	default:
		pr("  -c, --connection=<RC/XRC/DC>  Connection type RC/XRC/DC (default RC)\n")
	}
	pr("      --log_dci_streams=<log_num_dci_stream_channels> (default 0)  Run DC initiator as DCS instead of DCI with <log_num dci_stream_channels>\n")
	pr("      --log_active_dci_streams=<log_num_active_dci_stream_channels> (default log_num_dci_stream_channels)\n")
	pr("\t  --aes_xts Runs traffic with AES_XTS feature (encryption)\n")
	pr("\t  --encrypt_on_tx Runs traffic with encryption on tx (default decryption on tx)\n")
	pr("\t  --sig_before Puts signature on data before encrypting it (default after)\n")
	pr("      --aes_block_size=<512,520,4048,4096,4160> (default 512)\n")
	pr("\t  --data_enc_keys_number=<number of data encryption keys> (default 1)\n")
	pr("\t  --kek_path path to the key encryption key file\n")
	pr("\t  --credentials_path path to the credentials file\n")
	pr("\t  --data_enc_key_app_path path to the data encryption key app\n")
	if lat {
		pr("  -C, --report-cycles  report times in cpu cycle units (default microseconds)\n")
	}
	pr("  -d, --ib-dev=<dev>  Use IB device <dev> (default first device found)\n")
	pr("  -D, --duration  Run test for a customized period of seconds.\n")
	if !write {
		pr("  -e, --events  Sleep on CQ events (default poll)\n")
		pr("  -X, --vector=<completion vector>  Set <completion vector> used for events\n")
	}
	pr("  -f, --margin  measure results within margins. (default=2sec)\n")
	pr("  -F, --CPU-freq  Do not show a warning even if cpufreq_ondemand module is loaded, and cpu-freq is not on max.\n")
	if verb == VerbSend {
		pr("  -g, --mcg  Send messages to multicast group with 1 QP attached to it.\n")
		pr("         When there is no multicast gid specified, a default IPv6 typed gid will be used.\n")
	}
	pr("  -h, --help  Show this help screen.\n")
	if lat {
		pr("  -H, --report-histogram  Print out all results (default print summary only)\n")
	}
	fmt.Fprintf(w, "  -i, --ib-port=<port>  Use port <port> of IB device (default %d)\n", 1)
	if verb != VerbRead && verb != VerbAtomic {
		pr("  -I, --inline_size=<size>  Max size of message to be sent in inline\n")
	}
	if bw {
		pr("  -l, --post_list=<list size>\n")
		pr(" Post list of send WQEs of <list size> size (instead of single post)\n")
		pr("      --recv_post_list=<list size> Post list of receive WQEs of <list size> size (instead of single post)\n")
	}
	fmt.Fprintf(w, "  -L, --hop_limit=<hop_limit>  Set hop limit value (ttl for IPv4 RawEth QP). Values 0-255 (default %d)\n", 64)
	pr("  -m, --mtu=<mtu>  MTU size : 256 - 4096 (default port mtu)\n")
	if verb == VerbSend {
		pr("  -M, --MGID=<multicast_gid>  In multicast, uses <multicast_gid> as the group MGID.\n")
		if bw {
			pr("      --connectionless  Open a connectionless server instance for multicast traffic.\n")
		}
	}
	iters := defIters
	if write && bw {
		iters = defItersWB
	}
	fmt.Fprintf(w, "  -n, --iters=<iters>  Number of exchanges (at least %d, default %d)\n", minIter, iters)
	if bw {
		pr("  -N, --noPeak Cancel peak-bw calculation (default with peak up to iters=20000)\n")
	}
	if verb == VerbRead || verb == VerbAtomic {
		pr("  -o, --outs=<num>  num of outstanding read/atom(default max of device)\n")
	}
	if bw {
		pr("  -O, --dualport  Run test in dual-port mode.\n")
	}
	fmt.Fprintf(w, "  -p, --port=<port>  Listen on/connect to port <port> (default %d)\n", defPort)
	if bw {
		fmt.Fprintf(w, "  -q, --qp=<num of qp's>  Num of qp's(default %d)\n", 1)
		pr("  -Q, --cq-mod  Generate Cqe only after <--cq-mod> completion\n")
	}
	if verb == VerbSend || p.WriteImm {
		fmt.Fprintf(w, "  -r, --rx-depth=<dep>  Rx queue size (default %d). If using srq, rx-depth controls max-wr size of the srq\n", defRxSend)
	}
	pr("  -R, --rdma_cm  Connect QPs with rdma_cm and run test on those QPs\n")
	if verb != VerbAtomic {
		size := defSizeBW
		if lat {
			size = defSizeLat
		}
		fmt.Fprintf(w, "  -s, --size=<size>  Size of message to exchange (default %d)\n", size)
	}
	fmt.Fprintf(w, "  -S, --sl=<sl>  SL (default %d)\n", 0)
	if bw {
		fmt.Fprintf(w, "  -t, --tx-depth=<dep>  Size of tx queue (default %d)\n", defTxBW)
	}
	pr("  -T, --tos=<tos value>  Set <tos_value> to RDMA-CM QPs. available only with -R flag. values 0-256 (default off)\n")
	fmt.Fprintf(w, "  -u, --qp-timeout=<timeout>  QP timeout, timeout value is 4 usec * 2 ^(timeout), default %d\n", defQPTime)
	if lat {
		pr("  -U, --report-unsorted  (implies -H) print out unsorted results (default sorted)\n")
	}
	pr("  -V, --version  Display version number\n")
	if bw {
		pr("  -w, --limit_bw=<value>  Set verifier limit for bandwidth\n")
	}
	pr("  -W, --report-counters=<list of counter names>  Report performance counter change (example: \"counters/port_xmit_data,hw_counters/out_of_buffer\")\n")
	pr("  -x, --gid-index=<index>  Test uses GID with GID index\n")
	if bw {
		pr("  -y, --limit_msgrate=<value>  Set verifier limit for Msg Rate\n")
	}
	pr("  -z, --comm_rdma_cm  Communicate with rdma_cm module to exchange data - use regular QPs\n")

	pr("\n")
	pr("      --out_json  Save the report in a json file\n")
	pr("      --out_json_file=<file>  Name of the report json file. (Default: perftest_out.json in the working directory) \n")
	pr("      --cpu_util  Show CPU Utilization in report, valid only in Duration mode \n")
	pr("      --congest_type=<DCQCN, LDCP, HC3, DIP>  Use the hnsdv interface to set congestion control algorithm.\n")
	pr("      --dlid  Set a Destination LID instead of getting it from the other side.\n")
	pr("      --dont_xchg_versions  Do not exchange versions and MTU with other side \n")
	pr("      --force-link=<value>  Force the link(s) to a specific type: IB or Ethernet.\n")
	if verb == VerbSend {
		pr("      --use-srq  Use a Shared Receive Queue. --rx-depth controls max-wr size of the SRQ \n")
	}
	pr("      --no_lock  No lock in IO, including post send, post recv, post srq recv and poll cq \n")
	pr("      --no_ddp  Disable the receiver capability to consume out-of-order WRs. \n")
	pr("      --ipv6  Use IPv6 GID. Default is IPv4\n")
	pr("      --ipv6-addr=<IPv6>  Use IPv6 address for parameters negotiation. Default is IPv4\n")
	pr("      --bind_source_ip  Source IP of the interface used for connection establishment. By default taken from routing table.\n")
	if lat {
		pr("      --latency_gap=<delay_time>  delay time between each post send\n")
	}
	pr("      --mmap=file  Use an mmap'd file as the buffer for testing P2P transfers.\n")
	pr("      --mmap-offset=<offset>  Use an mmap'd file as the buffer for testing P2P transfers.\n")
	if bw {
		pr("      --mr_per_qp  Create memory region for each qp.\n")
	}
	pr("      --odp  Use On Demand Paging instead of Memory Registration.\n")
	pr("      --output=<units> Set verbosity output level: bandwidth , message_rate, latency \n")
	if !(write && lat) {
		pr("      --payload_file_path=<payload_txt_file_path> Set the payload by passing a txt file containing a pattern in the next form(little endian): '0xaaaaaaaa, 0xbbbbbbbb, ...' .\n")
	}
	pr(" Latency measurement is Average calculation \n")
	pr("      --use_old_post_send Use old post send flow (ibv_post_send).\n")
	pr("      --perform_warm_up Perform some iterations before start measuring in order to warming-up memory cache, valid in Atomic, Read and Write BW tests\n")
	pr("      --pkey_index=<pkey index> PKey index to use for QP\n")
	if bw {
		pr("      --report-both  Report RX & TX results separately on Bidirectional BW tests\n")
		pr("      --report_gbits  Report Max/Average BW of test in Gbit/sec (instead of MiB/sec)\n")
		pr("        Note: MiB=2^20 byte, while Gb=10^9 bits. Use these formulas for conversion:\n")
		pr("        Factor=10^9/(2^20*8)=119.2; MiB=Gb_result * factor; Gb=MiB_result / factor\n")
		pr("      --report-per-port  Report BW data on both ports when running Dualport and Duration mode\n")
		pr("      --reversed  Reverse traffic direction - Server send to client\n")
		pr("      --run_infinitely  Run test forever, print results every <duration> seconds\n")
	}
	pr("      --retry_count=<value>  Set retry count value in rdma_cm mode\n")
	pr("      --tclass=<value>  Set the Traffic Class in GRH (if GRH is in use)\n")
	pr("      --flow_label=<fl0,fl1,fl2,...>  Set the flow_label in GRH for each qp in roundrobin method(if GRH is in use)\n")
	pr("      --use_hugepages  Use Hugepages instead of contig, memalign allocations.\n")
	if write || verb == VerbRead {
		pr("      --use-null-mr  Allocate a null memory region for the client with ibv_alloc_null_mr.\n")
	}
	if bw {
		pr("      --wait_destroy=<seconds>  Wait <seconds> before destroying allocated resources (QP/CQ/PD/MR..)\n")
		pr("      --disable_pcie_relaxed Disable PCIe relaxed ordering\n")
		pr("\n Rate Limiter:\n")
		pr("      --burst_size=<size> Set the amount of messages to send in a burst when using rate limiter\n")
		pr("      --typical_pkt_size=<bytes> Set the size of packet to send in a burst. Only supports PP rate limiter\n")
		pr("      --rate_limit=<rate> Set the maximum rate of sent packages. default unit is [Gbps]. use --rate_units to change that.\n")
		pr("      --rate_units=<units> [Mgp] Set the units for rate limit to MiBps (M), Gbps (g) or pps (p). default is Gbps (g).\n")
		pr("        Note (1): pps not supported with HW limit.\n")
		pr("        Note (2): When using PP rate_units is forced to Kbps.\n")
		pr("      --rate_limit_type=<type> [HW/SW/PP] Limit the QP's by HW, PP or by SW. Disabled by default. When rate_limit is not specified HW limit is Default.\n")
		pr("        Note: in Latency under load test SW rate limit is forced\n")
	}
	if verb == VerbWrite && !p.WriteImm {
		pr("      --write_with_imm  Use write-with-immediate verb instead of write\n")
		pr("      --unsolicited_write  Use unsolicited receive for write-with-immediate\n")
	}
	pr("\n")
}
