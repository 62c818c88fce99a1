package verbs

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Kind names the type of a live object.
type Kind string

// Object kinds.
const (
	KindDevice  Kind = "device"
	KindPD      Kind = "pd"
	KindMR      Kind = "mr"
	KindCQ      Kind = "cq"
	KindChannel Kind = "channel"
	KindQP      Kind = "qp"
	KindAH      Kind = "ah"
	KindSRQ     Kind = "srq"
	KindBuffer  Kind = "buffer"
	KindLoop    Kind = "loop"
	// KindCMChannel and KindCMID are rdma_cm event channels and ids
	// (CMListener, CMConn).
	KindCMChannel Kind = "cm_channel"
	KindCMID      Kind = "cm_id"
)

// Object is one live (created and not yet closed) object.
type Object struct {
	Kind    Kind
	ID      uint64
	Created string    // file:line of the first caller outside package verbs
	owners  [2]uint64 // IDs of the objects it was created from (0 = none)
	uses    []uint64  // IDs of other objects it uses (a loop: its QPs, CQs, SRQ, buffers)
}

// String returns e.g. "qp #12 created at foo_test.go:42".
func (o Object) String() string {
	return fmt.Sprintf("%s #%d created at %s", o.Kind, o.ID, o.Created)
}

var registry = struct {
	sync.Mutex
	next uint64
	live map[uint64]Object
}{live: map[uint64]Object{}}

// track registers a new object created from the given owners (at most two:
// an MR belongs to its PD and its Buffer) and returns its ID.
func track(kind Kind, owners ...uint64) uint64 {
	created := callerOutside()
	registry.Lock()
	defer registry.Unlock()
	registry.next++
	id := registry.next
	o := Object{Kind: kind, ID: id, Created: created}
	copy(o.owners[:], owners)
	registry.live[id] = o
	return id
}

// trackUses registers a new object as track does, which also uses the
// objects uses (a loop: the QPs, CQs, SRQ and buffers its C code
// touches): they refuse to close while it is open (usersError).
func trackUses(kind Kind, uses []uint64, owners ...uint64) uint64 {
	id := track(kind, owners...)
	registry.Lock()
	o := registry.live[id]
	o.uses = slices.DeleteFunc(slices.Clone(uses), func(u uint64) bool { return u == 0 })
	registry.live[id] = o
	registry.Unlock()
	return id
}

// usersError returns nil when no live object uses id, else an error
// naming the object and its users.
func usersError(id uint64) error {
	users := liveWhere(func(o Object) bool { return slices.Contains(o.uses, id) })
	if len(users) == 0 {
		return nil
	}
	registry.Lock()
	self := registry.live[id]
	registry.Unlock()
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.String()
	}
	return fmt.Errorf("verbs: cannot close %s: %d open objects use it: %s (close them first)",
		self, len(users), strings.Join(names, "; "))
}

// untrack removes an object; unknown IDs are ignored.
func untrack(id uint64) {
	registry.Lock()
	delete(registry.live, id)
	registry.Unlock()
}

// Live returns the objects created and not yet closed, sorted by ID.
func Live() []Object {
	return liveWhere(func(Object) bool { return true })
}

// children returns the live objects owned by id.
func children(id uint64) []Object {
	return liveWhere(func(o Object) bool { return o.owners[0] == id || o.owners[1] == id })
}

func liveWhere(keep func(Object) bool) []Object {
	registry.Lock()
	out := make([]Object, 0, len(registry.live))
	for _, o := range registry.live {
		if keep(o) {
			out = append(out, o)
		}
	}
	registry.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// childrenError returns nil when id owns no live objects, else an error
// naming them; what is e.g. `device "rxe0"`.
func childrenError(what string, id uint64) error {
	kids := children(id)
	if len(kids) == 0 {
		return nil
	}
	names := make([]string, len(kids))
	for i, k := range kids {
		names[i] = k.String()
	}
	return fmt.Errorf("verbs: cannot close %s: %d objects created from it are still open: %s",
		what, len(kids), strings.Join(names, "; "))
}

const pkgPrefix = "github.com/rdmabench/rdmabench/verbs."

// callerOutside returns file:line of the first stack frame whose function is
// not in package verbs or is in a _test.go file (the outermost frame if none).
func callerOutside() string {
	var pcs [32]uintptr
	n := runtime.Callers(2, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	last := "unknown"
	for {
		f, more := frames.Next()
		loc := fmt.Sprintf("%s:%d", f.File, f.Line)
		if !strings.HasPrefix(f.Function, pkgPrefix) || strings.HasSuffix(f.File, "_test.go") {
			return loc
		}
		last = loc
		if !more {
			return last
		}
	}
}
