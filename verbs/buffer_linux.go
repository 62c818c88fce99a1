package verbs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func mmapBuffer(size int, huge bool) ([]byte, error) {
	page := os.Getpagesize()
	flags := unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	if huge {
		hp, err := hugePageSize()
		if err != nil {
			return nil, err
		}
		page = hp
		flags |= unix.MAP_HUGETLB
	}
	size = (size + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap %d bytes: %w", size, err)
	}
	return mem, nil
}

func munmapBuffer(mem []byte) error { return unix.Munmap(mem) }

// hugePageSize reads "Hugepagesize: N kB" from /proc/meminfo.
func hugePageSize() (int, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseHugePageSize(data)
}

func parseHugePageSize(meminfo []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) == 3 && string(f[0]) == "Hugepagesize:" && string(f[2]) == "kB" {
			kb, err := strconv.Atoi(string(f[1]))
			if err != nil || kb <= 0 {
				return 0, fmt.Errorf("bad Hugepagesize line %q", sc.Text())
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no Hugepagesize in /proc/meminfo")
}
