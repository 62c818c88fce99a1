package verbs

import (
	"fmt"
	"unsafe"
)

// Buffer is page-aligned memory outside the Go heap (an anonymous mmap), so
// its address can be handed to the NIC and to C freely.
type Buffer struct {
	mem  []byte
	id   uint64
	huge bool
}

// AllocBuffer maps size bytes of anonymous memory, rounded up to the page
// size (the huge page size, from /proc/meminfo, when huge is true; the
// mapping then uses MAP_HUGETLB and fails if no huge pages are reserved).
func AllocBuffer(size int, huge bool) (*Buffer, error) {
	if err := checkMin("buffer size", int64(size), 1, "AllocBuffer size"); err != nil {
		return nil, err
	}
	mem, err := mmapBuffer(size, huge)
	if err != nil {
		return nil, fmt.Errorf("verbs: allocating a %d-byte buffer (huge=%t): %w", size, huge, err)
	}
	return &Buffer{mem: mem, huge: huge, id: track(KindBuffer)}, nil
}

// Bytes returns the whole mapping (nil after Close).
func (b *Buffer) Bytes() []byte { return b.mem }

// Addr returns the start address (0 after Close).
func (b *Buffer) Addr() uint64 {
	if len(b.mem) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b.mem[0])))
}

// Len returns the mapped length in bytes (after rounding up; 0 after Close).
func (b *Buffer) Len() int { return len(b.mem) }

// Close unmaps the buffer. It fails, leaving the buffer mapped, while MRs
// registered on it are open. A second Close returns nil.
func (b *Buffer) Close() error {
	if b.mem == nil {
		return nil
	}
	if err := childrenError(fmt.Sprintf("buffer at %#x", b.Addr()), b.id); err != nil {
		return err
	}
	if err := usersError(b.id); err != nil {
		return err
	}
	if err := munmapBuffer(b.mem); err != nil {
		return fmt.Errorf("verbs: unmapping buffer: %w", err)
	}
	b.mem = nil
	untrack(b.id)
	return nil
}

// slice returns b.mem[off:off+n] after checking the range.
func (b *Buffer) slice(off, n int) ([]byte, error) {
	if b.mem == nil {
		return nil, fmt.Errorf("verbs: buffer: %w", ErrClosed)
	}
	if off < 0 || n < 1 || off > len(b.mem) || n > len(b.mem)-off {
		return nil, fmt.Errorf("verbs: range [%d, %d+%d) is outside the %d-byte buffer", off, off, n, len(b.mem))
	}
	return b.mem[off : off+n], nil
}
