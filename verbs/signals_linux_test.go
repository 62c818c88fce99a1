//go:build linux

package verbs_test

import (
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// signalStorm sends SIGURG to every thread of this process every interval
// until the returned stop is called (stop waits for it to end). SIGURG is
// the signal the Go runtime preempts a goroutine with; a thread that gets
// it unasked ignores it, but a system call it interrupts either returns
// EINTR or is restarted (SA_RESTART), which is what the tests that run
// under it check the package survives (issue #42: siw's rdma_connect).
func signalStorm(every time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pid := os.Getpid()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			tasks, err := os.ReadDir("/proc/self/task")
			if err != nil {
				continue
			}
			for _, e := range tasks {
				if tid, err := strconv.Atoi(e.Name()); err == nil {
					_ = unix.Tgkill(pid, tid, unix.SIGURG) // a thread that ended meanwhile: ESRCH
				}
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
