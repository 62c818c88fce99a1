// Package history has one job: keeping rdmabench's results over time.
// It stores result files in a perfdata store (golang.org/x/perf/storage:
// the Go project's benchmark storage) and reads them back as one series
// per benchmark, in its deciding unit (results.Deciding), run by run.
//
// Two stores, one schema and one query language:
//   - Local: an embedded SQLite database (results/history.db by
//     default) written by x/perf's own storage/db, exactly as a
//     perfdata server (localperfdata, or a team's on MySQL) indexes an
//     upload: the same tables, the same upload, upload-part,
//     upload-time and upload-file labels.
//   - Remote: a perfdata server at a URL, through x/perf's
//     storage.Client.
//
// Put adds rdmabench's labels as configuration lines in front of the
// file, so that both stores carry them alike: commit, host,
// rdmabench-version, run-time (when the run was made; series are
// ordered by it), rdmabench-sha256 (of the file as given: a file already
// stored is not stored twice) and rdmabench-units (each Unit line's
// direction, which perfdata's index does not keep). The file's own
// configuration lines (rdma-device, rdma-fw, kernel, ...) are labels
// too.
package history
