package facts_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rdmabench/rdmabench/cmd/internal/facts"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		text  string
		want  facts.Rate
		mbps  float64
		label string
	}{
		{"2.5 Gb/sec (1X SDR)", facts.Rate{Gbps: 2.5, Width: 1, Lane: "SDR"}, 312.5, "IB SDR 1X; rxe on a link of unknown speed"},
		{"10 Gb/sec (4X SDR)", facts.Rate{Gbps: 10, Width: 4, Lane: "SDR"}, 1250, "IB SDR"},
		{"30 Gb/sec (12X SDR)", facts.Rate{Gbps: 30, Width: 12, Lane: "SDR"}, 3750, "IB SDR 12X"},
		{"20 Gb/sec (4X DDR)", facts.Rate{Gbps: 20, Width: 4, Lane: "DDR"}, 2500, "IB DDR"},
		{"40 Gb/sec (4X QDR)", facts.Rate{Gbps: 40, Width: 4, Lane: "QDR"}, 5000, "IB QDR"},
		{"40 Gb/sec (4X FDR10)", facts.Rate{Gbps: 40, Width: 4, Lane: "FDR10"}, 5000, "IB FDR10"},
		{"56 Gb/sec (4X FDR)", facts.Rate{Gbps: 56, Width: 4, Lane: "FDR"}, 7000, "IB FDR"},
		{"100 Gb/sec (4X EDR)", facts.Rate{Gbps: 100, Width: 4, Lane: "EDR"}, 12500, "IB EDR"},
		{"200 Gb/sec (4X HDR)", facts.Rate{Gbps: 200, Width: 4, Lane: "HDR"}, 25000, "IB HDR"},
		{"400 Gb/sec (4X NDR)", facts.Rate{Gbps: 400, Width: 4, Lane: "NDR"}, 50000, "IB NDR"},
		{"800 Gb/sec (4X XDR)", facts.Rate{Gbps: 800, Width: 4, Lane: "XDR"}, 100000, "IB XDR"},
		{"25 Gb/sec (1X EDR)", facts.Rate{Gbps: 25, Width: 1, Lane: "EDR"}, 3125, "RoCE 25GbE"},
		{"100 Gb/sec (2X HDR)", facts.Rate{Gbps: 100, Width: 2, Lane: "HDR"}, 12500, "RoCE 100GbE PAM4"},
		{"10 Gb/sec (1X QDR)", facts.Rate{Gbps: 10, Width: 1, Lane: "QDR"}, 1250, "RoCE 10GbE"},
		{"10 Gb/sec (1X FDR10)", facts.Rate{Gbps: 10, Width: 1, Lane: "FDR10"}, 1250, "rxe 10GbE"},
		{"50 Gb/sec (2X EDR)", facts.Rate{Gbps: 50, Width: 2, Lane: "EDR"}, 6250, "RoCE 50GbE"},
		{"1600 Gb/sec (8X XYZ)", facts.Rate{Gbps: 1600, Width: 8, Lane: "XYZ"}, 200000, "a lane name not known: not checked"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := facts.ParseRate(tt.text)
			require.NoError(t, err, tt.label)
			assert.Equal(t, tt.want, got, tt.label)
			assert.Equal(t, tt.mbps, got.MBps(), tt.label)
		})
	}
}

func TestParseRateErrors(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", "want"},
		{"100 Gb/sec", "want"},
		{"100 Gbps (4X EDR)", "want"},
		{"0 Gb/sec (4X EDR)", "not a positive number"},
		{"100 Gb/sec (0X EDR)", "not a positive lane count"},
		{"56 Gb/sec (4X EDR)", "4X EDR is 100 Gb/s, not 56"},
		{"2 Gb/sec (1X SDR)", "1X SDR is 2.5 Gb/s, not 2"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			_, err := facts.ParseRate(tt.text)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "\""+tt.text+"\"", "the error quotes the text")
		})
	}
}
