package blame

import "strconv"

// linkRates maps each node with a link-rate-mbps fact to it (Read
// checked that it is a positive number).
func linkRates(f *Fabric) map[string]float64 {
	out := make(map[string]float64)
	for n, facts := range f.Facts {
		if v, ok := facts[factRate]; ok {
			if r, err := strconv.ParseFloat(v, 64); err == nil && r > 0 {
				out[n] = r
			}
		}
	}
	return out
}

// floorShare is one node's MB/s over its links in one scenario: the
// median share of the link rate, and the median value.
type floorShare struct {
	share, value float64
	rate         float64 // the node's own link rate
	links        int
}

// floorFindings returns a below-floor finding for each node of f with a
// known link rate whose best MB/s scenario reaches, as the median over
// its links, less than floor of the link rate (the lower of the two
// ends' rates).
func floorFindings(f *Fabric, rates map[string]float64, floor float64) map[string]Finding {
	best := make(map[string]Finding)
	for _, sc := range f.Scenarios {
		for n, s := range floorShares(f, sc, rates) {
			if b, ok := best[n]; !ok || s.share > b.Score {
				best[n] = Finding{
					Code: CodeBelowFloor, Scenario: sc, Unit: unitMBps,
					Score: s.share, Threshold: floor, Median: s.value, LinkRate: s.rate, Links: s.links,
				}
			}
		}
	}
	for n, fd := range best {
		if !(fd.Score < floor) {
			delete(best, n)
		}
	}
	return best
}

// floorShares computes the floorShare of each node with a known rate in
// one scenario's MB/s.
func floorShares(f *Fabric, scenario string, rates map[string]float64) map[string]floorShare {
	shares, values := make(map[string][]float64), make(map[string][]float64)
	for _, l := range f.Links {
		runs := f.Runs[scenario][unitMBps][l]
		if len(runs) == 0 {
			continue
		}
		rs, okS := rates[l.Src]
		rd, okD := rates[l.Dst]
		rate := min(rs, rd)
		switch {
		case !okS && !okD:
			continue
		case !okS:
			rate = rd
		case !okD:
			rate = rs
		}
		v := median(runs)
		for _, n := range []string{l.Src, l.Dst} {
			if _, ok := rates[n]; ok {
				shares[n] = append(shares[n], v/rate)
				values[n] = append(values[n], v)
			}
		}
	}
	out := make(map[string]floorShare, len(shares))
	for n, s := range shares {
		out[n] = floorShare{share: median(s), value: median(values[n]), rate: rates[n], links: len(s)}
	}
	return out
}
