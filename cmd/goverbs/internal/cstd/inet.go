package cstd

import (
	"fmt"
	"strconv"
	"strings"
)

// InetNtop6 formats an IPv6 address exactly like glibc's inet_ntop(AF_INET6):
// the longest run (of at least two) of zero groups becomes "::", and
// IPv4-compatible (::a.b.c.d) and IPv4-mapped (::ffff:a.b.c.d) addresses end
// in dotted decimal.
func InetNtop6(a [16]byte) string {
	var words [8]int
	for i := range words {
		words[i] = int(a[2*i])<<8 | int(a[2*i+1])
	}
	bestBase, bestLen, curBase, curLen := -1, 0, -1, 0
	for i, wd := range words {
		if wd == 0 {
			if curBase == -1 {
				curBase, curLen = i, 1
			} else {
				curLen++
			}
		} else if curBase != -1 {
			if bestBase == -1 || curLen > bestLen {
				bestBase, bestLen = curBase, curLen
			}
			curBase = -1
		}
	}
	if curBase != -1 && (bestBase == -1 || curLen > bestLen) {
		bestBase, bestLen = curBase, curLen
	}
	if bestBase != -1 && bestLen < 2 {
		bestBase = -1
	}
	var b strings.Builder
	for i := 0; i < 8; i++ {
		if bestBase != -1 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				b.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			b.WriteByte(':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 5 && words[5] == 0xffff)) {
			fmt.Fprintf(&b, "%d.%d.%d.%d", a[12], a[13], a[14], a[15])
			return b.String()
		}
		b.WriteString(strconv.FormatInt(int64(words[i]), 16))
	}
	if bestBase != -1 && bestBase+bestLen == 8 {
		b.WriteByte(':')
	}
	return b.String()
}
