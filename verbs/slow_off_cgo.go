//go:build !rdmaslow && linux && cgo

package verbs

// slowResult is the identity in a normal build (see slow_cgo.go: the
// gate's self-check build, tag rdmaslow).
func (l *Loop) slowResult(r LoopResult) LoopResult { return r }
