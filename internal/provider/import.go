package provider

// ContextImporter is implemented by a Driver that can build its per-context state on a command file another
// context opened (ibv_import_device): query runs the kernel's QUERY_CONTEXT, which takes no driver data, in
// place of GET_CONTEXT. Without it, an import is refused as not supported.
type ContextImporter interface {
	ImportContext(dev *Device, query Exec) (Context, error)
}

// PDImporter is implemented by a Context that can make its PD state for a PD another process allocated on the
// same command file, from its handle (ibv_import_pd). Without it, an import is refused as not supported.
type PDImporter interface {
	ImportPD(handle uint32) (PD, error)
}
