package units

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRegister(t *testing.T) {
	saved := list
	t.Cleanup(func() { list = saved })
	list = append([]Unit(nil), saved...)
	tests := []struct {
		name, better, err string
	}{
		{"checks/s", "higher", ""},
		{"checks/s", "higher", ""}, // again, same direction
		{"checks/s", "lower", `unit "checks/s" is registered as better=higher, not lower`},
		{"p50-ns", "higher", `unit "p50-ns" is registered as better=lower, not higher`},
		{"two words", "lower", "a unit is one word"},
		{"", "lower", "a unit is one word"},
		{"ack-ns", "smaller", `better="smaller": want higher or lower`},
	}
	for _, tt := range tests {
		err := Register(tt.name, tt.better)
		if tt.err == "" {
			assert.NoError(t, err, tt.name)
			continue
		}
		assert.ErrorContains(t, err, tt.err, tt.name)
	}
	n := 0
	for _, u := range All() {
		if u.Name == "checks/s" {
			n++
		}
	}
	assert.Equal(t, 1, n, "registered once")
	var buf bytes.Buffer
	PrintFrom(&buf, len(saved))
	assert.Equal(t, "Unit checks/s better=higher\n", buf.String(), "printed after the run by Main")
}
