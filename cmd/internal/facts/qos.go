package facts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// QoS is what a RoCE port's netdev says of congestion control and
// lossless traffic, where sysfs has it; an empty field is not known.
type QoS struct {
	// ECNNP and ECNRP are the priorities with RoCE ECN enabled as
	// notification point (the receiver: marks become CNPs) and reaction
	// point (the sender: CNPs slow it), "3" or "3,4", "none" when the
	// netdev has the setting and no priority is on: mlx5's
	// <netdev>/ecn/roce_np/enable/<prio> and …/roce_rp/enable/<prio>.
	ECNNP, ECNRP string
	// Trust is what the port classifies by, "pcp" or "dscp": MLNX_OFED's
	// <netdev>/qos/trust.
	Trust string
	// PFC is the per-priority PFC setting as MLNX_OFED's <netdev>/qos/pfc
	// shows it, on one line.
	PFC string
}

// ReadQoS reads netdev's QoS under src's sysfs root. Missing settings
// are absent fields (rxe's and siw's netdevs have none); a file that
// exists and cannot be read, or an enable file holding other than 0 or
// 1, is an error naming it.
func ReadQoS(src Source, netdev string) (QoS, error) {
	if netdev == "" || netdev == "." || netdev == ".." || strings.ContainsAny(netdev, "/\x00") {
		return QoS{}, fmt.Errorf("facts: netdev name %q is not a netdev's", netdev)
	}
	dir := filepath.Join(src.sys(), "class", "net", netdev)
	var q QoS
	var err error
	if q.ECNNP, err = ecnPriorities(filepath.Join(dir, "ecn", "roce_np", "enable")); err != nil {
		return QoS{}, err
	}
	if q.ECNRP, err = ecnPriorities(filepath.Join(dir, "ecn", "roce_rp", "enable")); err != nil {
		return QoS{}, err
	}
	if q.Trust, _, err = readOptional(filepath.Join(dir, "qos", "trust")); err != nil {
		return QoS{}, err
	}
	if q.PFC, _, err = readOptional(filepath.Join(dir, "qos", "pfc")); err != nil {
		return QoS{}, err
	}
	q.PFC = strings.Join(strings.Fields(q.PFC), " ")
	return q, nil
}

// ecnPriorities lists the priorities (file names 0..7) of dir whose
// file holds 1, "none" when none does, "" when dir does not exist.
func ecnPriorities(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("facts: %w", err)
	}
	var on []int
	for _, e := range ents {
		prio, err := strconv.Atoi(e.Name())
		if err != nil || prio < 0 || prio > 7 {
			continue // not a priority's file
		}
		file := filepath.Join(dir, e.Name())
		v, err := readValue(file)
		if err != nil {
			return "", fmt.Errorf("facts: %w", err)
		}
		switch v {
		case "1":
			on = append(on, prio)
		case "0":
		default:
			return "", fmt.Errorf("facts: %s holds %q: want 0 or 1", file, v)
		}
	}
	if len(on) == 0 {
		return "none", nil
	}
	slices.Sort(on)
	parts := make([]string, len(on))
	for i, p := range on {
		parts[i] = strconv.Itoa(p)
	}
	return strings.Join(parts, ","), nil
}

// String formats the known settings, "ecn-np=3 ecn-rp=3 trust=dscp
// pfc=…", or "none readable" when sysfs has none of them.
func (q QoS) String() string {
	var parts []string
	for _, p := range []struct{ k, v string }{{"ecn-np", q.ECNNP}, {"ecn-rp", q.ECNRP}, {"trust", q.Trust}, {"pfc", q.PFC}} {
		if p.v != "" {
			parts = append(parts, p.k+"="+p.v)
		}
	}
	if len(parts) == 0 {
		return "none readable (no ecn/ or qos/ under the netdev's sysfs)"
	}
	return strings.Join(parts, " ")
}

// addQoS files the port's netdev (its GID table's, where sysfs names
// one: RoCE) and that netdev's QoS.
func (f *Facts) addQoS(src Source, devDir string, port int) error {
	nd, ok, err := readOptional(filepath.Join(devDir, "ports", strconv.Itoa(port), "gid_attrs", "ndevs", "0"))
	if err != nil || !ok || nd == "" {
		return err
	}
	q, err := ReadQoS(src, nd)
	if err != nil {
		return err
	}
	f.Netdev, f.ECNNP, f.ECNRP, f.Trust, f.PFC = nd, q.ECNNP, q.ECNRP, q.Trust, q.PFC
	return nil
}
