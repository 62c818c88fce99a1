// Command deps installs the Debian or Ubuntu packages that rdmabench
// needs on this machine, and nothing else (make deps runs it).
//
//	go run ./ci/deps [-n] [-vm]
//
// It reads /etc/os-release, the architecture (dpkg --print-architecture)
// and whether the kernel has RDMA by loopback.Detect's rules (a device in
// /sys/class/infiniband, or rdma_rxe loaded, built in or under
// /lib/modules/$(uname -r)), chooses the packages with Packages, and
// installs those dpkg does not list as installed. Where RDMA is native
// that is the user-space RDMA stack and tools only; the qemu guest's
// packages (qemu, a kernel that ships rdma_rxe, busybox-static,
// rdmacm-utils, and on Debian that kernel's headers for ci/siw.sh) come only
// without native RDMA or with -vm (make test boots guests everywhere). On
// Ubuntu the kernel is linux-image-generic and the modules package of its
// release that carries rdma_rxe (linux-modules-extra-<release>); on Debian
// linux-image-<arch>.
//
// The guest's packages include slurm-wlm and munge (the Slurm cluster of
// guests, ci/fabric/cluster.sh, runs the host's binaries). Their services
// must not run on the host, so before installing them it keeps them from
// starting: where systemd runs, it masks munge.service, slurmd.service
// and slurmctld.service (systemctl mask: the packages' scripts start no
// masked unit, and the mask holds across reboots; systemctl unmask undoes
// it); elsewhere, when there is no /usr/sbin/policy-rc.d, it installs one
// that denies those three for the time of the install and removes it
// afterwards (an existing policy-rc.d, such as Docker's, which denies
// every start, is left as it is).
//
// Before installing it runs apt-get update and checks with apt-cache
// policy that every missing package has a candidate; one without stops
// the run before anything is installed, with its name. It installs with
//
//	[sudo] env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends PKG...
//
// (sudo when not root; env keeps DEBIAN_FRONTEND through sudo). Every
// command it runs has a deadline: a query (dpkg, apt-cache) one minute,
// apt-get update 10 minutes, apt-get install 30 minutes; apt-get install
// waits at most 5 minutes for the dpkg lock another apt holds, and
// apt-get update, which fails at once while another apt (on a fresh
// machine, unattended-upgrades) holds the package lists' lock, is run
// again every 5 s until its deadline. A command past its deadline gets
// SIGTERM, and SIGKILL 10 s later; then the wait for it ends and the
// error names the command and the deadline. Through sudo the SIGKILL
// reaches sudo only, so a root apt-get may outlive the wait. A query
// past its deadline is such an error, never taken for a missing package
// or an unknown architecture. With -n
// it prints the chosen packages, one a line with "installed" or
// "missing", and changes nothing.
//
// It uses the standard library only, so that it runs on a fresh machine
// before the Go modules are downloaded. Exit status: 0 done, 1 error,
// 2 usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Deadlines of the commands deps runs.
const (
	updateTimeout  = 10 * time.Minute
	installTimeout = 30 * time.Minute
	// lockTimeout is how long apt-get waits for the dpkg lock (seconds).
	lockTimeout = "300"
)

// queryTimeout is the deadline of a query (a variable for the tests).
var queryTimeout = time.Minute

// lockRetry is how often apt-get update runs again while another apt
// holds the package lists' lock.
const lockRetry = 5 * time.Second

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("deps", flag.ContinueOnError)
	fl.SetOutput(stderr)
	dry := fl.Bool("n", false, "dry run: print the chosen packages and whether each is installed; install nothing")
	vm := fl.Bool("vm", false, "also the qemu guest's packages where RDMA is native (make test boots guests)")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "usage: deps [-n] [-vm]\n")
		return 2
	}
	if err := deps(*dry, *vm, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "make deps: %v\n", err)
		return 1
	}
	return 0
}

// deps chooses the packages for this machine and installs the missing
// ones (or, dry, prints them).
func deps(dry, vm bool, stdout, stderr io.Writer) error {
	osRelease, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return fmt.Errorf("reading the distribution: %w", err)
	}
	distro, name, err := ParseDistro(string(osRelease))
	if err != nil {
		return err
	}
	a, err := arch()
	if err != nil {
		return err
	}
	h := Host{OSRelease: string(osRelease), Arch: a, VM: vm}
	var why string
	h.NativeRDMA, why, err = nativeRDMA(hostRoot)
	if err != nil {
		return err
	}
	guest := !h.NativeRDMA || h.VM
	switch {
	case !h.NativeRDMA:
		why += ": the qemu guest's packages too"
	case h.VM:
		why += "; -vm: the qemu guest's packages too"
	default:
		why += ": no kernel, qemu or busybox needed"
	}
	fmt.Fprintf(stderr, "make deps: %s, %s; %s\n", name, h.Arch, why)

	updated := false
	if distro == Ubuntu && guest {
		// The modules package is named after the release that
		// linux-image-generic brings: the installed one's, else the
		// candidate's (which needs fresh package lists).
		deps, ok, err := installedField("linux-image-generic", "${Depends}")
		if err != nil {
			return err
		}
		if !ok {
			if !dry {
				if err := aptUpdate(stderr); err != nil {
					return err
				}
				updated = true
			}
			out, err := query("apt-cache", "depends", "linux-image-generic")
			if errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			if err != nil {
				return fmt.Errorf("apt-cache depends linux-image-generic: %w (no package linux-image-generic in the apt sources?)", err)
			}
			deps = string(out)
		}
		if h.UbuntuKernel, err = UbuntuKernel(deps); err != nil {
			return err
		}
	}
	pkgs, err := Packages(h)
	if err != nil {
		return err
	}
	var missing []string
	for _, p := range pkgs {
		_, ok, err := installedField(p, "${Package}")
		if err != nil {
			return err
		}
		if !ok {
			missing = append(missing, p)
		}
		if dry {
			state := "installed"
			if !ok {
				state = "missing"
			}
			fmt.Fprintf(stdout, "%s\t%s\n", p, state)
		}
	}
	if dry || len(missing) == 0 {
		if len(missing) == 0 {
			fmt.Fprintf(stderr, "make deps: all %d packages are installed\n", len(pkgs))
		}
		return nil
	}
	if !updated {
		if err := aptUpdate(stderr); err != nil {
			return err
		}
	}
	if err := checkCandidates(missing, distro, name); err != nil {
		return err
	}
	mask, policy := servicePlan(missing, isDir(systemdDir), exists(policyRCD))
	if len(mask) > 0 {
		fmt.Fprintf(stderr, "make deps: masking %s: the Slurm cluster's guests start their own daemons, the host must not (systemctl unmask undoes it)\n", strings.Join(mask, " "))
		if err := sudo(stderr, queryTimeout, append([]string{"systemctl", "mask"}, mask...)...); err != nil {
			return err
		}
	}
	if policy {
		remove, err := denyServices(stderr)
		if err != nil {
			return err
		}
		defer remove()
	}
	fmt.Fprintf(stderr, "make deps: installing %s\n", strings.Join(missing, " "))
	return sudo(stderr, installTimeout, append([]string{"env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-o", "DPkg::Lock::Timeout=" + lockTimeout, "install", "-y", "-qq", "--no-install-recommends"}, missing...)...)
}

// Where systemd keeps its runtime state (a directory only while systemd
// runs) and where the Debian packages' scripts look for a policy on
// starting services; variables for the tests.
var (
	systemdDir = "/run/systemd/system"
	policyRCD  = "/usr/sbin/policy-rc.d"
)

// servicePlan says how the services of the cluster packages among
// missing are kept from starting when they are installed: mask lists the
// systemd units to mask first (systemd runs), policy asks for a
// temporary policy-rc.d that denies them (no systemd, and no policy-rc.d
// already). Neither when no cluster package is missing, nor when a
// policy-rc.d exists and systemd does not run: that policy decides.
func servicePlan(missing []string, systemd, policyExists bool) (mask []string, policy bool) {
	needed := false
	for _, p := range clusterPackages {
		if slices.Contains(missing, p) {
			needed = true
		}
	}
	switch {
	case !needed:
		return nil, false
	case systemd:
		return slices.Clone(clusterServices), false
	default:
		return nil, !policyExists
	}
}

// denyPolicy is the temporary policy-rc.d: it denies (101) the cluster
// packages' init scripts and allows (0) everything else, as if there
// were no policy.
const denyPolicy = `#!/bin/sh
# Installed by make deps (ci/deps) for the time of an apt-get install:
# the Slurm cluster's services must not start on this host.
case "$1" in munge|slurmd|slurmctld) exit 101 ;; esac
exit 0
`

// denyServices installs denyPolicy as policy-rc.d and returns what
// removes it again.
func denyServices(stderr io.Writer) (remove func(), err error) {
	f, err := os.CreateTemp("", "policy-rc.d")
	if err != nil {
		return nil, fmt.Errorf("writing a policy-rc.d: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(denyPolicy)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing a policy-rc.d: %w", err)
	}
	fmt.Fprintf(stderr, "make deps: %s denies munge, slurmd and slurmctld while they are installed\n", policyRCD)
	if err := sudo(stderr, queryTimeout, "install", "-m", "0755", f.Name(), policyRCD); err != nil {
		return nil, err
	}
	return func() {
		if err := sudo(stderr, queryTimeout, "rm", "-f", policyRCD); err != nil {
			fmt.Fprintf(stderr, "make deps: removing the temporary %s: %v (remove it by hand)\n", policyRCD, err)
		}
	}, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// arch is the Debian architecture of this machine: dpkg's word, else
// Go's, which names amd64 and arm64 alike. dpkg past its deadline is an
// error.
func arch() (string, error) {
	out, err := query("dpkg", "--print-architecture")
	if errors.Is(err, context.DeadlineExceeded) {
		return "", fmt.Errorf("reading the architecture: %w", err)
	}
	if a := strings.TrimSpace(string(out)); err == nil && a != "" {
		return a, nil
	}
	return runtime.GOARCH, nil
}

// installedField returns a dpkg-query field (e.g. "${Depends}") of pkg
// and whether pkg is installed ("install ok installed": not merely
// known, nor removed with its configuration files left). dpkg-query past
// its deadline is an error; failing otherwise, pkg is not installed.
func installedField(pkg, field string) (string, bool, error) {
	out, err := query("dpkg-query", "-W", "-f", "${Status}\t"+field, pkg)
	if errors.Is(err, context.DeadlineExceeded) {
		return "", false, fmt.Errorf("checking whether %s is installed: %w", pkg, err)
	}
	if err != nil {
		return "", false, nil
	}
	status, value, _ := strings.Cut(string(out), "\t")
	return value, status == "install ok installed", nil
}

// checkCandidates fails, naming them, when some of pkgs have nothing apt
// could install, or when apt-cache policy passes its deadline.
func checkCandidates(pkgs []string, distro Distro, name string) error {
	var none []string
	for _, p := range pkgs {
		out, err := query("apt-cache", "policy", p)
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("checking apt's candidate for %s: %w", p, err)
		}
		if _, ok := Candidate(string(out)); !ok {
			none = append(none, p)
		}
	}
	if len(none) == 0 {
		return nil
	}
	hint := ""
	if distro == Ubuntu {
		hint = " (some, such as perftest, are in Ubuntu's universe component: add-apt-repository universe)"
	}
	return fmt.Errorf("no package %s in the apt sources of %s (apt-cache policy shows no candidate)%s; nothing was installed",
		strings.Join(none, ", "), name, hint)
}

// aptUpdate refreshes the package lists, running apt-get update again
// every lockRetry while another apt holds their lock, within
// updateTimeout in all. LC_ALL=C keeps apt's messages in English, for
// aptLocked.
func aptUpdate(stderr io.Writer) error {
	return retryLocked(stderr, updateTimeout, lockRetry, func(w io.Writer, timeout time.Duration) error {
		return sudo(w, timeout, "env", "LC_ALL=C", "apt-get", "-o", "DPkg::Lock::Timeout="+lockTimeout, "update", "-qq")
	})
}

// retryLocked calls run, which writes apt's output to w and must end
// within the timeout it is given, until it succeeds or fails otherwise
// than on apt's lock (aptLocked). It tries again after every, saying so
// on stderr, only while that leaves time before its deadline, timeout
// from now; past it the error wraps context.DeadlineExceeded.
func retryLocked(stderr io.Writer, timeout, every time.Duration, run func(w io.Writer, timeout time.Duration) error) error {
	deadline := time.Now().Add(timeout)
	for {
		var out strings.Builder
		err := run(io.MultiWriter(stderr, &out), time.Until(deadline))
		if !aptLocked(out.String(), err) {
			return err
		}
		if time.Until(deadline) <= every {
			return fmt.Errorf("%w; apt's lock was still held at the %v deadline: %w", err, timeout, context.DeadlineExceeded)
		}
		fmt.Fprintf(stderr, "make deps: another apt (unattended-upgrades?) holds apt's lock; trying again in %v\n", every)
		time.Sleep(every)
	}
}

// aptLocked tells whether apt failed, with err, because another apt held
// its lock: then it is worth trying again. apt exits 100 on every error,
// so its message is the only sign; it is matched by text (in the C
// locale) for that reason. A deadline is no lock.
func aptLocked(output string, err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	return strings.Contains(output, "Could not get lock") || strings.Contains(output, "Unable to lock directory")
}

// query runs a read-only command and returns its standard output; past
// queryTimeout it is stopped and the error wraps
// context.DeadlineExceeded.
func query(args ...string) ([]byte, error) {
	var out strings.Builder
	err := runFor(queryTimeout, &out, io.Discard, args...)
	return []byte(out.String()), err
}

// runFor runs a command with a deadline: past it the command gets
// SIGTERM, and SIGKILL 10 s later, when the wait for it ends (the
// command, if it is sudo, may leave its child running), and the error
// names the command and the deadline, wraps context.DeadlineExceeded and
// keeps the command's own error. A command that succeeds is a success
// even if the deadline passes as it ends.
func runFor(timeout time.Duration, stdout, stderr io.Writer, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	if err != nil && ctx.Err() != nil {
		if !errors.Is(err, context.DeadlineExceeded) { // the command's own error, kept
			err = fmt.Errorf("%w (%w)", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%s: stopped after the %v deadline: %w", strings.Join(args, " "), timeout, err)
	}
	return err
}

// sudo runs a command as root, within timeout: directly when this process
// is root, through sudo otherwise. Its output goes to stderr.
func sudo(stderr io.Writer, timeout time.Duration, args ...string) error {
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("%s needs root, and sudo is not installed", strings.Join(args, " "))
		}
		args = append([]string{"sudo"}, args...)
	}
	fmt.Fprintf(stderr, "+ %s\n", strings.Join(args, " "))
	if err := runFor(timeout, stderr, stderr, args...); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// root is the file system nativeRDMA reads (loopback.Root's fields).
type root struct{ Sys, Lib, Proc string }

var hostRoot = root{Sys: "/sys", Lib: "/lib/modules", Proc: "/proc"}

// nativeRDMA tells whether benchmarks can run on this kernel, by the
// rules of loopback.Detect (which this command cannot import: it must
// build without the Go modules): an entry in <Sys>/class/infiniband, or
// rdma_rxe loaded or built in (<Sys>/module/rdma_rxe), or its module file
// under <Lib>/<release>. The string says why.
func nativeRDMA(r root) (bool, string, error) {
	rel, err := os.ReadFile(filepath.Join(r.Proc, "sys/kernel/osrelease"))
	if err != nil {
		return false, "", fmt.Errorf("reading the kernel release: %w", err)
	}
	kernel := strings.TrimSpace(string(rel))
	devs, err := os.ReadDir(filepath.Join(r.Sys, "class/infiniband"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, "", fmt.Errorf("listing RDMA devices: %w", err)
	}
	if len(devs) > 0 {
		return true, "RDMA device " + devs[0].Name() + " present", nil
	}
	if _, err := os.Stat(filepath.Join(r.Sys, "module/rdma_rxe")); err == nil {
		return true, "kernel " + kernel + " has rdma_rxe loaded", nil
	}
	found := false
	// An unreadable tree means no module found, as for loopback.Detect.
	_ = filepath.WalkDir(filepath.Join(r.Lib, kernel), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := strings.ReplaceAll(d.Name(), "-", "_")
		if !d.IsDir() && strings.HasPrefix(name, "rdma_rxe.ko") {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	if found {
		return true, "kernel " + kernel + " ships rdma_rxe", nil
	}
	return false, "kernel " + kernel + " has no RDMA devices and no rdma_rxe module", nil
}
