// Package ibvtext holds the texts libibverbs prints for enum values (ibv_wc_status_str and friends), which the
// tools must reproduce byte for byte. The library's own String methods (package verbs) are canonical names, not
// these.
package ibvtext

import "github.com/goverbs/goverbs/verbs"

var wcStatusStrs = [...]string{"success", "local length error", "local QP operation error",
	"local EE context operation error", "local protection error", "Work Request Flushed Error",
	"memory bind operation error", "bad response error", "local access error", "remote invalid request error",
	"remote access error", "remote operation error", "transport retry counter exceeded",
	"RNR retry counter exceeded", "local RDD violation error", "remote invalid RD request",
	"aborted error", "invalid EE context number", "invalid EE context state", "fatal error",
	"response timeout error", "general error", "TM error", "TM software rendezvous"}

// WCStatusStr is libibverbs' ibv_wc_status_str(s).
func WCStatusStr(s verbs.WCStatus) string {
	if int(s) < len(wcStatusStrs) {
		return wcStatusStrs[s]
	}
	return "unknown"
}
