// Package gate has one job: deciding whether NEW benchmark results are
// significantly worse than OLD ones, and reporting the decision with
// what it rests on. It pairs the benchmarks of two result sets (Set,
// read with internal/results), tests each benchmark once (Holm within
// it, Holm–Šidák across, paired where adjacent runs are correlated),
// calls every row a regression, a pass, UNDECIDED or not gated, says
// what each benchmark could have seen (detectable), and maps all of it
// to the gate's exit status (Report.ExitCode, Report.Outcome).
//
// The procedure, and why it is this one, is ci/gate's documentation
// (go doc ./ci/gate): the command parses the flags, reads the two files
// through this package and prints its report.
package gate
