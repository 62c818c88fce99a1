package facts

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
)

// Rate is a port's sysfs rate, "100 Gb/sec (4X EDR)", parsed.
type Rate struct {
	// Gbps is the total signalling rate in Gb/s (100).
	Gbps float64
	// Width is the number of lanes (4).
	Width int
	// Lane is the per-lane speed's name (EDR); it may be empty.
	Lane string
}

// laneGbps maps the lane speed names of the kernel's rate file to their
// per-lane signalling rate in Gb/s (the kernel's own table).
var laneGbps = map[string]float64{
	"SDR": 2.5, "DDR": 5, "QDR": 10, "FDR10": 10, "FDR": 14,
	"EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200,
}

// rateTolerance is how far two rates in Gb/s may differ and still agree:
// the kernel prints a rate to 0.5 Gb/s.
const rateTolerance = 0.05

// rateRE matches the kernel's "%d%s Gb/sec (%dX%s)" with " .5" folded in.
var rateRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?) Gb/sec \(([0-9]+)X ?([A-Za-z0-9]*)\)$`)

// ParseRate parses a port's rate text ("100 Gb/sec (4X EDR)", "2.5
// Gb/sec (1X SDR)"). It fails when the text has another form, a zero
// rate or width, or a known lane speed that disagrees with the total
// (4X EDR is 100 Gb/s, not 56).
func ParseRate(s string) (Rate, error) {
	m := rateRE.FindStringSubmatch(s)
	if m == nil {
		return Rate{}, fmt.Errorf("rate %q: want \"<Gb/s> Gb/sec (<width>X <speed>)\"", s)
	}
	gbps, err := strconv.ParseFloat(m[1], 64)
	if err != nil || gbps <= 0 {
		return Rate{}, fmt.Errorf("rate %q: %s is not a positive number of Gb/s", s, m[1])
	}
	width, err := strconv.Atoi(m[2])
	if err != nil || width <= 0 {
		return Rate{}, fmt.Errorf("rate %q: width %sX is not a positive lane count", s, m[2])
	}
	r := Rate{Gbps: gbps, Width: width, Lane: m[3]}
	if lane, ok := laneGbps[r.Lane]; ok && !near(float64(width)*lane, gbps) {
		return Rate{}, fmt.Errorf("rate %q: %dX %s is %g Gb/s, not %g", s, width, r.Lane, float64(width)*lane, gbps)
	}
	return r, nil
}

// MBps is the rate in MB/s (10^6 bytes/s): Gb/s × 1000/8, the
// signalling rate with no encoding overhead subtracted.
func (r Rate) MBps() float64 { return r.Gbps * 1000 / 8 }

// near tells whether two rates in Gb/s agree.
func near(a, b float64) bool { return math.Abs(a-b) <= rateTolerance }
