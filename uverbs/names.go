package uverbs

import "github.com/goverbs/goverbs/internal/enumstr"

var mwTypeNames = [...]string{1: "TYPE_1", 2: "TYPE_2"}

// String is the window type's name ("TYPE_2").
func (t MWType) String() string { return enumstr.Name(mwTypeNames[:], uint64(t), "MWType") }

var mtuNames = [...]string{1: "256", 2: "512", 3: "1024", 4: "2048", 5: "4096"}

// String is the MTU in bytes ("1024").
func (m MTU) String() string { return enumstr.Name(mtuNames[:], uint64(m), "MTU") }

var accessNames = [...]string{"LOCAL_WRITE", "REMOTE_WRITE", "REMOTE_READ", "REMOTE_ATOMIC", "MW_BIND",
	"ZERO_BASED", "ON_DEMAND", "HUGETLB", "FLUSH_GLOBAL", "FLUSH_PERSISTENT", 20: "RELAXED_ORDERING"}

// String names the access bits ("LOCAL_WRITE|REMOTE_READ").
func (a Access) String() string { return enumstr.Flags(accessNames[:], uint64(a)) }

var xrcdFlagNames = [...]string{6: "CREATE", 7: "EXCLUSIVE"}

// String names the flags ("CREATE|EXCLUSIVE").
func (f XRCDFlags) String() string { return enumstr.Flags(xrcdFlagNames[:], uint64(f)) }
