package ctxsync

// noCopy may be embedded in a struct that must not be copied after first use.
// go vet's copylocks check reports a copy of any struct that contains it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
