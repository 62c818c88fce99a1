package loopback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests run VM.Run on the host with a shell script in place of qemu:
// the script gets qemu's arguments and the two serial lines as fds 3
// (console) and 4 (output), so Run's plumbing, deadline and cleanup are
// tested without booting anything.

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestRunWithFakeQemu(t *testing.T) {
	tests := []struct {
		name     string
		script   string // $DIR is a scratch directory of the test
		timeout  time.Duration
		cancel   time.Duration // cancel the caller's context after this long
		failOut  bool          // pass a writer that fails instead of a buffer
		wantCode int
		wantOut  string
		wantErr  []string
		console  string        // expected in what Run echoes to vm.Console
		within   time.Duration // Run must return within this
	}{
		{
			name: "exit status and output",
			script: `printf 'out 1\nout 2\n' >&4
echo "rdmabench guest: loading modules" >&3
echo "RDMABENCH-EXIT=7" >&3`,
			wantCode: 7, wantOut: "out 1\nout 2\n", within: 5 * time.Second,
			console: "rdmabench guest: loading modules\nRDMABENCH-EXIT=7\n",
		},
		{
			name: "output is passed on byte for byte",
			script: `printf 'a\r\nb\rc\n' >&4
echo "RDMABENCH-EXIT=0" >&3`,
			wantCode: 0, wantOut: "a\r\nb\rc\n", within: 5 * time.Second,
		},
		{
			name: "a console line longer than the scanner's buffer",
			script: `head -c 2500000 /dev/zero | tr '\0' x >&3
echo >&3
echo "RDMABENCH-EXIT=0" >&3`,
			wantCode: 0, within: 10 * time.Second, console: "xxx\nRDMABENCH-EXIT=0\n",
		},
		{
			name: "an output writer that fails does not block qemu",
			script: `head -c 1000000 /dev/zero >&4
echo "RDMABENCH-EXIT=0" >&3`,
			failOut:  true,
			wantCode: 0, wantErr: []string{"passing on the guest's output: disk full"}, within: 10 * time.Second,
		},
		{
			name: "deadline, with a child of qemu holding the serial lines",
			script: `sleep 1000 >/dev/null 2>&1 & echo $! > "$DIR/pid"
echo "rdmabench guest: loading modules" >&3
wait`,
			timeout:  time.Second,
			wantCode: -1, wantErr: []string{"exceeded its deadline of 1s", "rdmabench guest: loading modules"},
			within: 10 * time.Second, // 1 s, then the 5 s grace for the pipes
		},
		{
			name:     "cancelled by the caller",
			script:   `exec sleep 1000`,
			cancel:   200 * time.Millisecond,
			wantCode: -1, wantErr: []string{"the guest was stopped: context canceled"}, within: 5 * time.Second,
		},
		{
			name:     "qemu fails",
			script:   `echo "qemu-system-x86_64: -accel kvm: failed to initialize kvm" >&2; exit 1`,
			wantCode: -1, wantErr: []string{"stopped without reporting an exit status", "exit status 1", "failed to initialize kvm"},
			within: 5 * time.Second,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			vm := fakeVM(t)
			vm.Qemu = writeScript(t, dir, tt.script)
			if tt.timeout > 0 {
				vm.Timeout = tt.timeout
			}
			var console bytes.Buffer
			vm.Console = &console
			t.Cleanup(func() { killPidFile(t, filepath.Join(dir, "pid")) })

			ctx := context.Background()
			if tt.cancel > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				time.AfterFunc(tt.cancel, cancel)
			}
			var out bytes.Buffer
			var w io.Writer = &out
			if tt.failOut {
				w = failingWriter{}
			}
			start := time.Now()
			code, err := vm.Run(ctx, Job{Args: []string{"true"}}, w)
			took := time.Since(start)

			assert.Less(t, took, tt.within, "Run took too long")
			assert.Equal(t, tt.wantCode, code)
			if tt.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				for _, s := range tt.wantErr {
					assert.Contains(t, err.Error(), s)
				}
			}
			assert.Equal(t, tt.wantOut, out.String())
			assert.Contains(t, console.String(), tt.console, "console echo")
		})
	}
}

// writeScript writes a shell script that plays qemu, with DIR set to dir.
func writeScript(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "fake-qemu")
	script := "#!/bin/sh\nDIR='" + dir + "'\n" + body + "\n"
	require.NoError(t, os.WriteFile(p, []byte(script), 0o755))
	return p
}

// killPidFile kills the process whose pid a script left in p, if any.
func killPidFile(t *testing.T, p string) {
	b, err := os.ReadFile(p)
	if err != nil {
		return
	}
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestRunPassesTheJobAndCleansUp(t *testing.T) {
	dir := t.TempDir()
	vm := fakeVM(t)
	vm.Qemu = writeScript(t, dir, `echo "$@" > "$DIR/args"
while [ $# -gt 0 ]; do
  if [ "$1" = -initrd ]; then cp "$2" "$DIR/initrd"; echo "$2" > "$DIR/initrd.path"; fi
  shift
done
echo "RDMABENCH-EXIT=0" >&3`)
	job := Job{Args: []string{"ibv_devinfo", "-d", "rxe0"}, Dir: "/work/main", Env: []string{"A=1"}}
	code, err := vm.Run(context.Background(), job, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, 0, code)

	args, err := os.ReadFile(filepath.Join(dir, "args"))
	require.NoError(t, err)
	assert.Contains(t, string(args), "-kernel "+vm.Kernel)

	img, err := os.ReadFile(filepath.Join(dir, "initrd"))
	require.NoError(t, err, "qemu got no -initrd")
	e := entryMap(t, readNewc(t, img))
	var got Job
	require.NoError(t, json.Unmarshal(e["job.json"].data, &got))
	assert.Equal(t, job, got)

	p, err := os.ReadFile(filepath.Join(dir, "initrd.path"))
	require.NoError(t, err)
	assert.NoFileExists(t, strings.TrimSpace(string(p)), "Run leaves its initrd behind")
}

func TestRunFailsBeforeStartingQemu(t *testing.T) {
	tests := []struct {
		name    string
		breakVM func(t *testing.T, vm *VM)
		wantErr string
	}{
		{
			name: "module missing from the tree",
			breakVM: func(t *testing.T, vm *VM) {
				p, err := findModule(vm.Modules, "rdma_rxe")
				require.NoError(t, err)
				require.NoError(t, os.Remove(p))
			},
			wantErr: "module rdma_rxe not found",
		},
		{
			name:    "no qemu",
			breakVM: func(t *testing.T, vm *VM) { vm.Qemu = "/nonexistent/qemu-system-x86_64" },
			wantErr: "starting qemu",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			vm := fakeVM(t)
			vm.Qemu = writeScript(t, dir, `touch "$DIR/started"`)
			tt.breakVM(t, vm)
			code, err := vm.Run(context.Background(), Job{Args: []string{"true"}}, &bytes.Buffer{})
			assert.Equal(t, -1, code)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.NoFileExists(t, filepath.Join(dir, "started"))
		})
	}
}
