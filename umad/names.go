package umad

import "fmt"

// The names libibumad gives management classes, methods, statuses and attributes (umad_class_str,
// umad_method_str, umad_common_mad_status_str, umad_sa_mad_status_str, umad_attribute_str), as types whose
// String (or Name, where the class decides) returns the same text, so a Go tool prints what a C tool prints.
// MADHdr keeps plain integer fields (they are wire fields); convert to these types to name them:
// umad.Class(h.MgmtClass).String().

// Class is a management class (the MAD header's MgmtClass).
type Class uint8

// Management classes (IB spec 13.4.4; libibumad's UMAD_CLASS_*) beside ClassSMI, ClassSA and ClassPMA.
const (
	ClassSubnDirectedRoute Class = 0x81
	ClassBM                Class = 0x05
	ClassDeviceMgmt        Class = 0x06
	ClassCM                Class = 0x07
	ClassSNMP              Class = 0x08
	ClassVendorRange1Start Class = 0x09
	ClassVendorRange1End   Class = 0x0f
	ClassApplicationStart  Class = 0x10
	ClassDeviceAdm         Class = 0x10
	ClassBootMgmt          Class = 0x11
	ClassBIS               Class = 0x12
	ClassCongestionMgmt    Class = 0x21
	ClassApplicationEnd    Class = 0x2f
	ClassVendorRange2Start Class = 0x30
	ClassVendorRange2End   Class = 0x4f
)

// String is umad_class_str's text: "Subn", "SubnAdm", "Perf", ..., "Vendor" and "Application" for those
// ranges, "<unknown>" otherwise.
func (c Class) String() string {
	switch c {
	case ClassSMI, ClassSubnDirectedRoute:
		return "Subn"
	case ClassSA:
		return "SubnAdm"
	case ClassPMA:
		return "Perf"
	case ClassBM:
		return "BM"
	case ClassDeviceMgmt:
		return "DevMgt"
	case ClassCM:
		return "ComMgt"
	case ClassSNMP:
		return "SNMP"
	case ClassDeviceAdm:
		return "DevAdm"
	case ClassBootMgmt:
		return "BootMgt"
	case ClassBIS:
		return "BIS"
	case ClassCongestionMgmt:
		return "CongestionManagment" // sic: libibumad's spelling
	}
	switch {
	case ClassVendorRange1Start <= c && c <= ClassVendorRange1End, ClassVendorRange2Start <= c && c <= ClassVendorRange2End:
		return "Vendor"
	case ClassApplicationStart <= c && c <= ClassApplicationEnd:
		return "Application"
	}
	return "<unknown>"
}

// Method is a MAD method (the header's Method; the high bit marks a response).
type Method uint8

// Methods common to every class (UMAD_METHOD_*, beside MethodGet, MethodSet and MethodGetResp) and subnet
// administration's own (UMAD_SA_METHOD_*).
const (
	MethodSend           Method = 0x03
	MethodTrap           Method = 0x05
	MethodReport         Method = 0x06
	MethodReportResp     Method = 0x86
	MethodTrapRepress    Method = 0x07
	MethodSAGetTable     Method = 0x12
	MethodSAGetTableResp Method = 0x92
	MethodSADelete       Method = 0x15
	MethodSADeleteResp   Method = 0x95
	MethodSAGetMulti     Method = 0x14
	MethodSAGetMultiResp Method = 0x94
	MethodSAGetTraceTbl  Method = 0x13
)

// Name is umad_method_str's text for the method in class c: subnet administration names its own methods
// first. An unknown method is "<unknown" — without the closing bracket, as libibumad spells it.
func (m Method) Name(c Class) string {
	if c == ClassSA {
		switch m {
		case MethodSAGetTable:
			return "GetTable"
		case MethodSAGetTableResp:
			return "GetTableResp"
		case MethodSADelete:
			return "Delete"
		case MethodSADeleteResp:
			return "DeleteResp"
		case MethodSAGetMulti:
			return "GetMulti"
		case MethodSAGetMultiResp:
			return "GetMultiResp"
		case MethodSAGetTraceTbl:
			return "GetTraceTable"
		}
	}
	switch m {
	case MethodGet:
		return "Get"
	case MethodSet:
		return "Set"
	case MethodGetResp:
		return "GetResp"
	case MethodSend:
		return "Send"
	case MethodTrap:
		return "Trap"
	case MethodReport:
		return "Report"
	case MethodReportResp:
		return "ReportResp"
	case MethodTrapRepress:
		return "TrapRepress"
	}
	return "<unknown"
}

// String is the method's common name ("Get", "GetResp", ...), or its number for one that has a name only in
// a class (or none): Name gives libibumad's text for a class.
func (m Method) String() string {
	if n := m.Name(0); n != "<unknown" {
		return n
	}
	return fmt.Sprintf("0x%02x", uint8(m))
}

// Status is the MAD header's status field, host order.
type Status uint16

// Status bits and codes common to every class (UMAD_STATUS_*); the class-specific code is the high byte.
const (
	StatusBusy               Status = 0x0001
	StatusRedirect           Status = 0x0002
	StatusBadVersion         Status = 1 << 2
	StatusMethodNotSupported Status = 2 << 2
	StatusAttrNotSupported   Status = 3 << 2
	StatusInvalidAttrValue   Status = 7 << 2
	StatusInvalidFieldMask   Status = 0x001c
	StatusClassMask          Status = 0xff00
)

// String is umad_common_mad_status_str's text: "Busy" and "Redirection required" first, then the invalid
// field code, else "Success" (the class-specific byte is not looked at; SAString names it for the SA).
func (s Status) String() string {
	if s&StatusBusy != 0 {
		return "Busy"
	}
	if s&StatusRedirect != 0 {
		return "Redirection required"
	}
	switch s & StatusInvalidFieldMask {
	case StatusBadVersion:
		return "Bad Version"
	case StatusMethodNotSupported:
		return "Method not supported"
	case StatusAttrNotSupported:
		return "Method/Attribute combo not supported"
	case StatusInvalidAttrValue:
		return "Invalid attribute/modifier field"
	}
	return "Success"
}

// saStatusText are subnet administration's class-specific statuses (UMAD_SA_STATUS_*), by code.
var saStatusText = [...]string{"Success", "No Resources", "Request Invalid", "No Records", "Too Many Records",
	"Invalid GID", "Insufficient Components", "Request Denied", "Priority Suggested"}

// SAString is umad_sa_mad_status_str's text: subnet administration's class-specific status (the high byte),
// "Undefined Error" for a code the SA does not define.
func (s Status) SAString() string {
	if c := int(s&StatusClassMask) >> 8; c < len(saStatusText) {
		return saStatusText[c]
	}
	return "Undefined Error"
}

// AttrID is a MAD attribute id (the header's AttrID, host order).
type AttrID uint16

var (
	commonAttrNames = map[AttrID]string{0x0001: "Class Port Info", 0x0002: "Notice", 0x0003: "Inform Info"}
	smAttrNames     = map[AttrID]string{0x0010: "NodeDescription", 0x0011: "NodeInfo", 0x0012: "SwitchInfo",
		0x0014: "GUIDInfo", 0x0015: "PortInfo", 0x0016: "P_KeyTable", 0x0017: "SLtoVLMappingTable",
		0x0018: "VLArbitrationTable", 0x0019: "LinearForwardingTable", 0x001a: "RandomForwardingTable",
		0x001b: "MulticastForwardingTable", 0x0020: "SMInfo", 0x0030: "VendorDiag", 0x0031: "LedInfo",
		0x001c: "LinkSpeedWidthPairsTable", 0x001d: "VendorSpecificMadsTable", 0x001e: "HierarchyInfo",
		0x0032: "CableInfo", 0x0033: "PortInfoExtended"}
	saAttrNames = map[AttrID]string{0x0011: "NodeRecord", 0x0012: "PortInfoRecord", 0x0013: "SLtoVLMappingTableRecord",
		0x0014: "SwitchInfoRecord", 0x0015: "LinearForwardingTableRecord", 0x0016: "RandomForwardingTableRecord",
		0x0017: "MulticastForwardingTableRecord", 0x0018: "SMInfoRecord", 0x00f3: "InformInfoRecord",
		0x0020: "LinkRecord", 0x0030: "GuidInfoRecord", 0x0031: "ServiceRecord", 0x0033: "P_KeyTableRecord",
		0x0035: "PathRecord", 0x0036: "VLArbitrationTableRecord", 0x0038: "MCMemberRecord", 0x0039: "TraceRecord",
		0x003a: "MultiPathRecord", 0x003b: "ServiceAssociationRecord", 0x0019: "LinkSpeedWidthPairsTableRecord",
		0x003c: "HierarchyInfoRecord", 0x003d: "CableInfoRecord", 0x003e: "PortInfoExtendedRecord"}
	cmAttrNames = map[AttrID]string{0x0010: "ConnectRequest", 0x0011: "MsgRcptAck", 0x0012: "ConnectReject",
		0x0013: "ConnectReply", 0x0014: "ReadyToUse", 0x0015: "DisconnectRequest", 0x0016: "DisconnectReply",
		0x0017: "ServiceIDResReq", 0x0018: "ServiceIDResReqResp", 0x0019: "LoadAlternatePath",
		0x001a: "AlternatePathResponse", 0x001b: "SuggestAlternatePath", 0x001c: "SuggestPathResponse"}
)

// String is the name every class gives the attribute (ClassPortInfo, Notice, InformInfo), or its number:
// Name gives libibumad's text for a class.
func (a AttrID) String() string {
	if n, ok := commonAttrNames[a]; ok {
		return n
	}
	return fmt.Sprintf("0x%04x", uint16(a))
}

// Name is umad_attribute_str's text for the attribute in class c: the subnet management, subnet
// administration and communication management classes name their own attributes; every class names the
// common ones (ClassPortInfo, Notice, InformInfo); anything else is "<unknown>". Performance management
// attributes are not named, as libibumad does not name them.
func (a AttrID) Name(c Class) string {
	var own map[AttrID]string
	switch c {
	case ClassSMI, ClassSubnDirectedRoute:
		own = smAttrNames
	case ClassSA:
		own = saAttrNames
	case ClassCM:
		own = cmAttrNames
	}
	if n, ok := own[a]; ok {
		return n
	}
	if n, ok := commonAttrNames[a]; ok {
		return n
	}
	return "<unknown>"
}
