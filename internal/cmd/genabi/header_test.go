package main

import (
	"reflect"
	"strings"
	"testing"
)

const sampleHeader = `
#ifndef SAMPLE_H
#define SAMPLE_H
#include <linux/types.h>

#define SAMPLE_VERSION 6 /* a comment with enum { FAKE_A } inside */
#define SAMPLE_FN(x) ((x) + 1)
#define SAMPLE_LONG (1 << \
	4)
// enum { FAKE_B };

enum sample_flags {
	SAMPLE_F_A = 1 << 0,
	SAMPLE_F_B,	/* trailing comment */
	SAMPLE_F_C = SAMPLE_F_A | SAMPLE_F_B,
};

enum {
	SAMPLE_ANON
};

struct sample_hdr {
	__u16 length;
	RDMA_UAPI_PTR(void *, val_ptr);
	union {
		__u8 raw[4];
		struct {
			__u16 a;
			__u16 b;
		} pair;
	} ex, ex2;
	union {
		__aligned_u64 data;
		__s64 data_s64;
	};
	struct {
		__u32 x;
		struct { __u8 y; } inner;
	} nested;
	__u32 p1, p2 : 3;
	__u64 attrs[];
};

union sample_gid {
	__u8 raw[16];
	struct { __be64 hi, lo; } global;
};

struct sample_dma {
	__u32 length;
	union {
		__DECLARE_FLEX_ARRAY(__u8, inline_data);
		__DECLARE_FLEX_ARRAY(struct sample_sge, sge);
	};
};
#endif
`

func TestScanHeader(t *testing.T) {
	h, err := scanHeader(sampleHeader)
	if err != nil {
		t.Fatal(err)
	}
	var consts []string
	for _, c := range h.consts {
		consts = append(consts, c.group+":"+c.name)
	}
	wantConsts := []string{
		"#define:SAMPLE_VERSION", "#define:SAMPLE_LONG",
		"enum sample_flags:SAMPLE_F_A", "enum sample_flags:SAMPLE_F_B", "enum sample_flags:SAMPLE_F_C",
		"anonymous enum:SAMPLE_ANON",
	}
	if !reflect.DeepEqual(consts, wantConsts) {
		t.Errorf("consts:\n got %q\nwant %q", consts, wantConsts)
	}

	var tags []string
	for _, r := range h.records {
		tags = append(tags, r.kind+" "+r.tag)
	}
	if want := []string{"struct sample_hdr", "union sample_gid", "struct sample_dma"}; !reflect.DeepEqual(tags, want) {
		t.Fatalf("records: got %q, want %q", tags, want)
	}

	hdr := h.records[0]
	if want := []string{"length", "val_ptr", "ex", "ex2", "data", "nested", "p1", "p2", "attrs"}; !reflect.DeepEqual(hdr.members, want) {
		t.Errorf("sample_hdr members: got %q, want %q", hdr.members, want)
	}
	if want := []string{"attrs"}; !reflect.DeepEqual(hdr.flex, want) {
		t.Errorf("sample_hdr flex: got %q, want %q", hdr.flex, want)
	}
	wantUnions := []cUnion{{names: []string{"ex", "ex2"}, first: "raw"}, {first: "data"}}
	if !reflect.DeepEqual(hdr.unions, wantUnions) {
		t.Errorf("sample_hdr unions: got %+v, want %+v", hdr.unions, wantUnions)
	}
	if got, want := anonStructMembers(hdr.body, ""), []string{"nested", "nested.inner"}; !reflect.DeepEqual(got, want) {
		t.Errorf("anonymous struct members: got %q, want %q", got, want)
	}
	if got, err := nestedMembers(hdr.body, "ex.pair"); err != nil || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("nestedMembers(ex.pair) = %q, %v; want [a b]", got, err)
	}
	if _, err := nestedMembers(hdr.body, "ex.missing"); err == nil {
		t.Error("nestedMembers(ex.missing) succeeded")
	}

	if got, want := bigEndianMembers(h.records[1].body), map[string]bool{}; !reflect.DeepEqual(got, want) {
		t.Errorf("sample_gid big-endian direct members: got %v, want none", got)
	}
	if b, err := nestedBody(h.records[1].body, "global"); err != nil || !reflect.DeepEqual(bigEndianMembers(b), map[string]bool{"hi": true, "lo": true}) {
		t.Errorf("sample_gid.global big-endian members: %v, %v; want hi, lo", bigEndianMembers(b), err)
	}

	gid := h.records[1]
	if gid.first != "raw" || !reflect.DeepEqual(gid.members, []string{"raw", "global"}) {
		t.Errorf("sample_gid: first %q members %q", gid.first, gid.members)
	}
	if got, want := anonStructMembers(gid.body, ""), []string{"global"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sample_gid anonymous struct members: got %q, want %q", got, want)
	}

	dma := h.records[2]
	if want := []string{"inline_data", "sge"}; !reflect.DeepEqual(dma.flex, want) {
		t.Errorf("sample_dma flex: got %q, want %q", dma.flex, want)
	}
	if want := []string{"length", "inline_data"}; !reflect.DeepEqual(dma.members, want) {
		t.Errorf("sample_dma members: got %q, want %q", dma.members, want)
	}
}

func TestScanHeaderErrors(t *testing.T) {
	for _, text := range []string{
		"enum e { 1BAD };",
		"struct s { int a;",
	} {
		if _, err := scanHeader(text); err == nil {
			t.Errorf("scanHeader(%q) succeeded", text)
		}
	}
}

func TestSelectConsts(t *testing.T) {
	h := &cHeader{consts: []cConst{
		{name: "FOO_A", group: "#define"},
		{name: "FOO_A", group: "enum x"}, // duplicate: first one wins
		{name: "BAR_B", group: "enum x"},
		{name: "ODD", group: "enum x"},
	}}
	spec := headerSpec{name: "t.h", prefixes: []string{"FOO_", "BAR_"}, skip: map[string]string{"ODD": "test"}}
	got, err := selectConsts(spec, h)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "FOO_A" || got[1].name != "BAR_B" {
		t.Errorf("selectConsts = %+v", got)
	}
	spec.skip = nil
	if _, err := selectConsts(spec, h); err == nil || !strings.Contains(err.Error(), "ODD") {
		t.Errorf("selectConsts without skip entry: err = %v, want one naming ODD", err)
	}
}

func TestNames(t *testing.T) {
	checkMapping(t, "camel", camel, [][2]string{
		{"ib_uverbs_ioctl_hdr", "IbUverbsIoctlHdr"},
		{"object_id", "ObjectId"},
		{"mlx5_ib_create_qp", "Mlx5IbCreateQp"},
		{"mminfo", "Mminfo"},
		{"_sockaddr_in6", "SockaddrIn6"},
		{"rxe_send_wr__x", "RxeSendWrX"},
	})
	checkMapping(t, "outputName", outputName, [][2]string{
		{"ib_user_verbs.h", "zib_user_verbs_linux.go"},
		{"mlx5-abi.h", "zmlx5_abi_linux.go"},
	})
}

func TestFieldRules(t *testing.T) {
	for _, tc := range []struct {
		godefs, c string
		want      string
		wantErr   bool
	}{
		{"Attr_id", "attr_id", "AttrId", false},
		{"Id", "elem_id", "ElemId", false}, // cgo stripped the shared "elem_" prefix
		{"Pad_1", "pad_1", "_", false},
		{"Padding", "padding", "_", false},
		{"Pad_cgo_0", "", "_", false},
		{"_", "", "_", false},
		{"Flags", "length", "", true},
	} {
		cnames := []string{}
		if tc.c != "" {
			cnames = append(cnames, tc.c)
		}
		got, _, err := fieldName(tc.godefs, &cnames)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("fieldName(%q, [%q]) = %q, %v; want %q (error %v)", tc.godefs, tc.c, got, err, tc.want, tc.wantErr)
		}
	}
	checkMapping(t, "fieldType", fieldType, [][2]string{
		{"[64]int8", "[64]byte"},
		{"[2][3]int8", "[2][3]byte"},
		{"_Ctype_struct_rxe_send_wr", "RxeSendWr"},
		{"[4]_Ctype_struct_ib_uverbs_sge", "[4]IbUverbsSge"},
		{"uint32", "uint32"},
		{"*_Ctype_struct_ib_qp", "uint64"}, // siw_cqe.base_qp: an address, never a Go pointer
	})
}

// FuzzScanHeader checks that the header scanner never panics and that every
// name it reports is a C identifier.
func FuzzScanHeader(f *testing.F) {
	f.Add(sampleHeader)
	f.Add("struct a { union { int x; } ")
	f.Add("enum { A = 1, B, };\n#define C 3\n")
	f.Fuzz(func(t *testing.T, text string) {
		h, err := scanHeader(text)
		if err != nil {
			return
		}
		for _, c := range h.consts {
			if identRe.FindString(c.name) != c.name {
				t.Errorf("constant name %q is not an identifier", c.name)
			}
		}
		for _, r := range h.records {
			if identRe.FindString(r.tag) != r.tag {
				t.Errorf("record tag %q is not an identifier", r.tag)
			}
			anonStructMembers(r.body, "")
		}
	})
}

// checkMapping checks that f (named name) maps each case's first string to its second.
func checkMapping(t *testing.T, name string, f func(string) string, cases [][2]string) {
	t.Helper()
	for _, c := range cases {
		if got := f(c[0]); got != c[1] {
			t.Errorf("%s(%q) = %q, want %q", name, c[0], got, c[1])
		}
	}
}
