//go:build !cgo

package history

const haveSQLite = false
