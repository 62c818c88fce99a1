package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/rdmatest/benchname"
)

// matrixNames is bench_test's default matrix, one name a line. bench_test
// is a test-only package that nothing can import, so its TestMatrixNames
// keeps this file equal to the matrix it declares (it fails whenever the
// two differ); reading it here checks our names against the matrix
// without a device and without copying the matrix.
var matrixNames = filepath.Join("..", "..", "bench_test", "testdata", "names.txt")

// TestScenariosInMatrix: every scenario's benchmark is in the default
// matrix, and the run calibrate makes of it (-test.bench benchRegexp,
// then sameBench on the results) keeps exactly that one benchmark.
func TestScenariosInMatrix(t *testing.T) {
	data, err := os.ReadFile(matrixNames)
	require.NoError(t, err)
	var matrix []benchname.Name
	for _, line := range strings.Fields(string(data)) {
		n, err := benchname.Parse(line)
		require.NoError(t, err, line)
		matrix = append(matrix, n)
	}
	require.NotEmpty(t, matrix)

	for _, s := range scenarios {
		// testing matches level i of a name against level i of the
		// pattern; levels below the pattern's run whatever they are.
		var pattern []*regexp.Regexp
		for _, l := range strings.Split(benchRegexp(s.bench), "/") {
			pattern = append(pattern, regexp.MustCompile(l))
		}
		var ran, kept []string
		for _, n := range matrix {
			levels := n.Levels()
			if len(levels) < len(pattern) {
				continue
			}
			match := true
			for i, re := range pattern {
				match = match && re.MatchString(levels[i])
			}
			if !match {
				continue
			}
			ran = append(ran, n.String())
			if sameBench(n.String(), s.bench) {
				kept = append(kept, n.String())
			}
		}
		assert.Len(t, kept, 1, "%s: %s is not one benchmark of %s (-test.bench ran %v)", s.name, s.bench, matrixNames, ran)
	}
}
