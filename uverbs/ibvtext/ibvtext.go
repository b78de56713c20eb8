// Package ibvtext holds the texts libibverbs gives enum values: ibv_wc_status_str, ibv_node_type_str,
// ibv_port_state_str, ibv_event_type_str and ibv_wr_opcode_str, byte for byte as rdma-core's newest release
// prints them (TestLabTextsMatchLibibverbs compares every value with sid's libibverbs in the lab). Tools that
// must print what the C tools print use these; programs that log use the String methods of the types, which
// are canonical names ("RETRY_EXC_ERR" where libibverbs says "transport retry counter exceeded").
//
// A value libibverbs does not know is "unknown", as in C. ibv_wr_opcode_str returns NULL for the two numbers
// enum ibv_wr_opcode skips (12 and 13); WROpcode answers "unknown" for them.
package ibvtext

import (
	"github.com/goverbs/goverbs/uverbs"
	"github.com/goverbs/goverbs/verbs"
)

func text(texts []string, v uint64) string {
	if v < uint64(len(texts)) && texts[v] != "" {
		return texts[v]
	}
	return "unknown"
}

var wcStatusTexts = [...]string{"success", "local length error", "local QP operation error",
	"local EE context operation error", "local protection error", "Work Request Flushed Error",
	"memory management operation error", "bad response error", "local access error",
	"remote invalid request error", "remote access error", "remote operation error",
	"transport retry counter exceeded", "RNR retry counter exceeded", "local RDD violation error",
	"remote invalid RD request", "aborted error", "invalid EE context number", "invalid EE context state",
	"fatal error", "response timeout error", "general error", "TM error", "TM software rendezvous"}

// WCStatus is ibv_wc_status_str(s): "transport retry counter exceeded" for verbs.WCRetryExcErr.
func WCStatus(s verbs.WCStatus) string { return text(wcStatusTexts[:], uint64(s)) }

var nodeTypeTexts = [...]string{"", "InfiniBand channel adapter", "InfiniBand switch", "InfiniBand router",
	"iWARP NIC", "usNIC", "usNIC UDP", "unspecified"}

// NodeType is ibv_node_type_str(t): "InfiniBand channel adapter" for a CA (rxe), "iWARP NIC" for an RNIC (siw).
func NodeType(t uverbs.NodeType) string { return text(nodeTypeTexts[:], uint64(t)) }

var portStateTexts = [...]string{"no state change (NOP)", "down", "init", "armed", "active", "active defer"}

// PortState is ibv_port_state_str(s): "active" for verbs.PortActive.
func PortState(s verbs.PortState) string { return text(portStateTexts[:], uint64(s)) }

var eventTexts = [...]string{"CQ error", "local work queue catastrophic error",
	"invalid request local work queue error", "local access violation work queue error",
	"communication established", "send queue drained", "path migrated", "path migration request error",
	"local catastrophic error", "port active", "port error", "LID change", "P_Key change", "SM change",
	"SRQ catastrophic error", "SRQ limit reached", "last WQE reached", "client reregistration",
	"GID table change", "WQ fatal", "Device link speed change"}

// Event is ibv_event_type_str(t): "port active" for uverbs.EventPortActive.
func Event(t uverbs.AsyncEventType) string { return text(eventTexts[:], uint64(t)) }

var wrOpcodeTexts = [...]string{"rdma-write", "rdma-write-with-imm", "send", "send-with-imm", "rdma-read",
	"atomic-cmp-and-swp", "atomic-fetch-and-add", "local-inv", "bind-mw", "send-with-inv", "tso", "driver1", "",
	"", "flush", "atomic-write"}

// WROpcode is ibv_wr_opcode_str(o): "rdma-write" for verbs.WRRDMAWrite.
func WROpcode(o verbs.WROpcode) string { return text(wrOpcodeTexts[:], uint64(o)) }
