//go:build cgo

package history

import _ "golang.org/x/perf/storage/db/sqlite3" // the sqlite3 driver, foreign keys on

const haveSQLite = true
