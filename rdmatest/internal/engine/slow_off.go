//go:build !(rdmaslow && linux && cgo)

package engine

import (
	"testing"

	"github.com/rdmabench/rdmabench/verbs"
)

// slowdown does nothing in a normal build (see slow_on.go: the gate's
// self-check build, tag rdmaslow).
func slowdown(testing.TB, *verbs.Loop) {}

// slowCounts returns a loop's histogram counts as they are in a normal
// build.
func slowCounts(_ *verbs.Loop, counts []int64) []int64 { return counts }

// slowConfig adds no configuration line in a normal build.
func slowConfig() [][2]string { return nil }
