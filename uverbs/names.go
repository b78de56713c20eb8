package uverbs

import "strconv"

// enumString is names[v], or "Type(v)" for a value without a name.
func enumString(names []string, v uint64, typ string) string {
	if v < uint64(len(names)) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.FormatUint(v, 10) + ")"
}

// flagString joins the names of the set bits with "|" ("0" for none); unnamed bits print in hex.
func flagString(names []string, v uint64) string {
	if v == 0 {
		return "0"
	}
	s := ""
	for i, n := range names {
		if n != "" && v&(1<<i) != 0 {
			if s != "" {
				s += "|"
			}
			s += n
			v &^= 1 << i
		}
	}
	if v != 0 {
		if s != "" {
			s += "|"
		}
		s += "0x" + strconv.FormatUint(v, 16)
	}
	return s
}

var mwTypeNames = [...]string{1: "TYPE_1", 2: "TYPE_2"}

// String is the window type's name ("TYPE_2").
func (t MWType) String() string { return enumString(mwTypeNames[:], uint64(t), "MWType") }

var mtuNames = [...]string{1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}

// String is the MTU in bytes ("1024").
func (m MTU) String() string { return enumString(mtuNames[:], uint64(m), "MTU") }

var accessNames = [...]string{"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC", "MW_BIND",
	"ZERO_BASED", "ON_DEMAND", "HUGETLB", 20: "RELAXED_ORDERING"}

// String names the access bits ("LOCAL_WRITE|REMOTE_READ").
func (a Access) String() string { return flagString(accessNames[:], uint64(a)) }

var xrcdFlagNames = [...]string{6: "CREATE", 7: "EXCLUSIVE"}

// String names the flags ("CREATE|EXCLUSIVE").
func (f XRCDFlags) String() string { return flagString(xrcdFlagNames[:], uint64(f)) }
