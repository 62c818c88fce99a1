package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseClockKind(t *testing.T) {
	for _, k := range []ClockKind{ClockAuto, ClockCounter, ClockMonotonic} {
		got, err := ParseClockKind(k.String())
		require.NoError(t, err)
		assert.Equal(t, k, got)
	}
	_, err := ParseClockKind("rdtsc")
	assert.ErrorContains(t, err, `clock "rdtsc": want auto, tsc or monotonic`)
}

func TestChooseClock(t *testing.T) {
	const invariant = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc rdtscp nonstop_tsc\n"
	const variant = "processor\t: 0\nflags\t\t: fpu tsc rdtscp\n"
	tests := []struct {
		name string
		host clockHost
		want ClockKind
		clk  string
		why  string
	}{
		{"kernel takes the TSC", clockHost{"amd64", variant, "tsc"}, ClockAuto, "tsc", "clocksource is tsc"},
		{"kernel took another", clockHost{"amd64", invariant, "hpet"}, ClockAuto, "monotonic", "clocksource is hpet, not tsc"},
		{"a guest's kvm-clock", clockHost{"amd64", invariant, "kvm-clock"}, ClockAuto, "monotonic", "kvm-clock"},
		{"unread, invariant", clockHost{"amd64", invariant, ""}, ClockAuto, "tsc", "constant_tsc and nonstop_tsc"},
		{"unread, not invariant", clockHost{"amd64", variant, ""}, ClockAuto, "monotonic", "no invariant TSC"},
		{"arm64 counter", clockHost{"arm64", "", "arch_sys_counter"}, ClockAuto, "cntvct", "arch_sys_counter"},
		{"arm64 unread", clockHost{"arm64", "", ""}, ClockAuto, "cntvct", "architected"},
		{"no counter read", clockHost{"riscv64", "", "riscv_clocksource"}, ClockAuto, "monotonic", "riscv64"},
		{"forced counter", clockHost{"amd64", variant, "hpet"}, ClockCounter, "tsc", "chosen"},
		{"forced monotonic", clockHost{"amd64", invariant, "tsc"}, ClockMonotonic, "monotonic", "chosen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk, why, err := chooseClock(tt.host, tt.want)
			require.NoError(t, err)
			assert.Equal(t, tt.clk, clk)
			assert.Contains(t, why, tt.why)
		})
	}
	_, _, err := chooseClock(clockHost{goarch: "riscv64"}, ClockCounter)
	assert.ErrorContains(t, err, "riscv64 has no CPU counter")
	_, _, err = chooseClock(clockHost{goarch: "amd64"}, ClockKind(7))
	assert.ErrorContains(t, err, "clock ClockKind(7)")
}

func TestClockConfig(t *testing.T) {
	assert.Equal(t, [][2]string{{"rdma-clock", "monotonic"}}, Clock{Name: "monotonic"}.Config())
	assert.Equal(t, [][2]string{{"rdma-clock", "tsc"}, {"rdma-clock-mhz", "2599.998"}},
		Clock{Name: "tsc", MHz: 2599.99812}.Config())
}
