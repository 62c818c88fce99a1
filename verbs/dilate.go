package verbs

// DilateResult returns r with its loop's elapsed time stretched by the
// factor f: Last, RecvFirst and RecvLast moved away from First by f (a
// zero RecvFirst or RecvLast, "none", stays zero). The gate's self-check
// build uses it (Loop.SetSlowdown); it is here, with no build tag, so
// that its arithmetic is tested in every build.
func DilateResult(r LoopResult, f float64) LoopResult {
	stretch := func(t int64) int64 {
		if t == 0 {
			return 0
		}
		return r.First + int64(float64(t-r.First)*f)
	}
	r.Last, r.RecvFirst, r.RecvLast = stretch(r.Last), stretch(r.RecvFirst), stretch(r.RecvLast)
	return r
}
