package verbs

import "fmt"

// ScoreGID is perftest's GID preference: 100 if the GID is an IPv4-mapped
// address (::ffff:a.b.c.d), +10 if it is not link-local (fe80::/10), +2 for
// RoCE v2 or +1 for RoCE v1. A higher score is better.
func ScoreGID(e GIDEntry) int {
	score := 0
	g := e.GID
	if g[0] == 0 && g[1] == 0 && g[2] == 0 && g[3] == 0 && g[4] == 0 && g[5] == 0 && g[6] == 0 && g[7] == 0 &&
		g[8] == 0 && g[9] == 0 && g[10] == 0xff && g[11] == 0xff {
		score += 100
	}
	if !(g[0] == 0xfe && g[1]&0xc0 == 0x80) {
		score += 10
	}
	switch e.Type {
	case GIDTypeRoCEv2:
		score += 2
	case GIDTypeRoCEv1:
		score++
	}
	return score
}

// PickBestGID returns the entry with the highest ScoreGID (the lowest index
// on ties), skipping zero GIDs. On an InfiniBand link layer it returns the
// entry with index 0 when present. It fails when no entry is usable.
func PickBestGID(entries []GIDEntry, linkLayer string) (GIDEntry, error) {
	best, bestScore := GIDEntry{}, -1
	for _, e := range entries {
		if e.GID.IsZero() {
			continue
		}
		if linkLayer == LinkLayerInfiniBand && e.Index == 0 {
			return e, nil
		}
		if s := ScoreGID(e); s > bestScore || (s == bestScore && e.Index < best.Index) {
			best, bestScore = e, s
		}
	}
	if bestScore < 0 {
		return GIDEntry{}, fmt.Errorf("verbs: no usable GID among %d table entries", len(entries))
	}
	return best, nil
}
