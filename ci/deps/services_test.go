package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServicePlan(t *testing.T) {
	units := []string{"munge.service", "slurmd.service", "slurmctld.service"}
	tests := []struct {
		name                 string
		missing              []string
		systemd, policyExist bool
		wantMask             []string
		wantPolicy           bool
	}{
		{"no cluster package missing", []string{"perftest", "qemu-system-x86"}, true, false, nil, false},
		{"systemd: mask the units", []string{"gcc", "munge"}, true, false, units, false},
		{"systemd with a policy-rc.d: mask anyway", []string{"slurm-wlm"}, true, true, units, false},
		{"no systemd, no policy-rc.d: a temporary one", []string{"slurm-wlm", "munge"}, false, false, nil, true},
		{"no systemd, a policy-rc.d (Docker's): it decides", []string{"munge"}, false, true, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mask, policy := servicePlan(tt.missing, tt.systemd, tt.policyExist)
			assert.Equal(t, tt.wantMask, mask)
			assert.Equal(t, tt.wantPolicy, policy)
		})
	}
	mask, _ := servicePlan([]string{"munge"}, true, false)
	mask[0] = "changed"
	assert.Equal(t, "munge.service", clusterServices[0], "the list is not shared")
}

func TestDenyPolicy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy-rc.d")
	require.NoError(t, os.WriteFile(p, []byte(denyPolicy), 0o755))
	type check struct {
		script string
		want   int
	}
	checks := []check{{"ssh", 0}, {"slurmdbd", 0}}
	for _, u := range clusterServices {
		checks = append(checks, check{strings.TrimSuffix(u, ".service"), 101})
	}
	for _, tt := range checks {
		err := exec.Command("sh", p, tt.script, "start").Run()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, tt.want, code, "policy-rc.d %s start", tt.script)
	}
}
