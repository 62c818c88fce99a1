// Package coord has one job: driving a fabric run. It walks a
// schedule's rounds, has each pair's source node run the scenarios
// against its destination through an Agent, and writes the one benchfmt
// result stream that package blame, benchstat and ci/gate read. It knows
// no network and no device: the transport is the Agent interface and the
// Dialer that makes one, so tests use a fake.
//
// # The stream Run writes
//
// In order:
//
//	pkg: github.com/rdmabench/rdmabench/cmd/rdmafabric
//	fabric.node.<node>.<fact>: <value>            each node's facts, in node order
//	Unit <unit> better=higher|lower               a custom unit, before its first row
//	BenchmarkFabric/src=<src>/dst=<dst>/<scenario>-1 <iters> <v> ns/op <v> MB/s …
//	fabric.node.<node>.counter.<counter>: <delta> after the last row
//	fabric.error.node=<node>: <message>           after the last row
//	fabric.error.src=<src>/dst=<dst>/<scenario>: <message>
//
// Rows. One row per run of a scenario on a directed link, its values
// in a stable unit order: ns/op, MB/s, then the other units sorted. The
// plan is run Options.Runs times over, in passes of one run per link
// and scenario, so that a link's runs fall in different rounds: a
// round's conditions (a phase of a TCG guest, other traffic at that
// time) then show as spread between the link's runs instead of landing
// on the link as if they were its own (docs/notes/
// fabric-2026-12-05-median-polish.md). The rows follow the passes, each
// round by round, and within a round in the round's pair order,
// whatever order the pairs finished in (they run at the same time, each
// into its own buffer, and are written after the round), then scenario
// by scenario in Options.Scenarios order. So two runs of the same
// inputs write the same stream.
//
// Units. ns/op, sec/op, MB/s, B/s, B/op and allocs/op have benchfmt's
// built-in directions; every other unit must be given one by the agent
// (Result.Units) and gets a `Unit NAME better=…` line just before the
// first row that uses it. A unit given two directions during a run is
// refused (the scenario whose results change it is a failure).
//
// Counters. Each run's Result.Counters are the source node's counter
// deltas during that run; Run adds them up per node over the whole run
// and writes them once, after the last row, as
// fabric.node.<node>.counter.<counter> lines (facts.CounterLines: node
// and counter lower case). blame reads configuration lines wherever they
// are; writing them after the rows keeps every row's configuration the
// same, so benchstat and ci/gate do not split the rows into groups.
//
// Failures. A pair that fails does not stop the run. Every link and
// scenario of the plan is either measured (Options.Runs rows) or a
// Failure in the Summary (the first failure; later passes do not run it
// again, and the rows of the passes before it stay) and a line
// fabric.error.src=<src>/dst=<dst>/<scenario>: <one-line message>
// after the last row (for the same reason as the counters); a node whose
// dial or facts failed is a NodeFailure and a line
// fabric.error.node=<node>: <message>. In these keys names and scenario
// are lower case, with '_' for a character no benchfmt key may hold (a
// space, ':', a control character, an upper-case letter without a lower
// case). blame reads only fabric.node.* keys, so it ignores them today;
// they tell a reader why a link has no row. The failures: the source
// node's dial failed, the agent's Run returned an error or results that
// break the Result rules, the pair's PairTimeout ran out (the scenario
// then running fails, the ones after it are not run and fail with the
// timeout), a unit direction conflict.
//
// # Running
//
// Run first dials every node and asks for its facts (at most 64 at once
// with Options.Concurrency, else one at a time; each under PairTimeout).
// Then, pass by pass, each round's pairs run at once (Concurrency) or
// one after another, each pair under its own PairTimeout, one run of
// each of its scenarios in order. A node is
// in at most one pair of a round (schedule.Plan.Check), so one Agent's
// calls never overlap; different Agents are called concurrently.
//
// Cancelling ctx stops the run between rounds (Concurrency) or between
// pairs (one at a time): the pairs already started see their context
// cancelled, their rows and failures are written, then the counter and
// failure lines, and Run returns an error wrapping ctx.Err(). Run never
// returns while a goroutine it started runs, so an Agent must return
// when its context is done.
package coord
