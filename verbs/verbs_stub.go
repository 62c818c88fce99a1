//go:build !(linux && cgo)

package verbs

// This file is the implementation used without cgo or off Linux: Devices
// and Open return ErrNotSupported, so no object is ever created and the
// methods below are unreachable through the public API.

import "time"

type (
	cDevice  struct{}
	cPD      struct{}
	cMR      struct{}
	cChannel struct{}
	cCQ      struct{}
	cQP      struct{}
	cAH      struct{}
	cSRQ     struct{}
)

// Devices lists the RDMA devices; without cgo it returns ErrNotSupported.
func Devices() ([]DeviceInfo, error) { return nil, ErrNotSupported }

func openDevice(string) (cDevice, DeviceAttr, error) { return cDevice{}, DeviceAttr{}, ErrNotSupported }

func (cDevice) close() error                                   { return ErrNotSupported }
func (cDevice) probeMaxInline() (int, error)                   { return 0, ErrNotSupported }
func (cDevice) queryPort(int) (PortAttr, error)                { return PortAttr{}, ErrNotSupported }
func (cDevice) queryGIDs(string, int, int) ([]GIDEntry, error) { return nil, ErrNotSupported }
func (cDevice) allocPD() (cPD, error)                          { return cPD{}, ErrNotSupported }
func (cDevice) createChannel() (cChannel, error)               { return cChannel{}, ErrNotSupported }
func (cDevice) createCQ(int, *cChannel) (cCQ, uintptr, error)  { return cCQ{}, 0, ErrNotSupported }
func (cPD) close() error                                       { return ErrNotSupported }
func (cPD) regMR([]byte, Access) (cMR, uint32, uint32, error)  { return cMR{}, 0, 0, ErrNotSupported }
func (cPD) createQP(QPConfig) (cQP, QPCaps, uint32, error) {
	return cQP{}, QPCaps{}, 0, ErrNotSupported
}
func (cPD) createAH(AHConfig, bool) (cAH, uintptr, error) { return cAH{}, 0, ErrNotSupported }
func (cPD) createSRQ(int, int) (cSRQ, error)              { return cSRQ{}, ErrNotSupported }
func (cMR) close() error                                  { return ErrNotSupported }
func (cChannel) close() error                             { return ErrNotSupported }
func (cChannel) wait(time.Time) (uintptr, error)          { return 0, ErrNotSupported }
func (cCQ) close() error                                  { return ErrNotSupported }
func (cCQ) poll([]WC) (int, error)                        { return 0, ErrNotSupported }
func (cCQ) notify(bool) error                             { return ErrNotSupported }
func (cQP) close() error                                  { return ErrNotSupported }
func (cQP) state() (QPState, error)                       { return QPSUnknown, ErrNotSupported }
func (cQP) connect(Transport, connectParams) error        { return ErrNotSupported }
func (cQP) toError() error                                { return ErrNotSupported }
func (cQP) postSend([]SendWR) error                       { return ErrNotSupported }
func (cQP) postRecv([]RecvWR) error                       { return ErrNotSupported }
func (cAH) close() error                                  { return ErrNotSupported }
func (cSRQ) close() error                                 { return ErrNotSupported }
func (cSRQ) postRecv([]RecvWR) error                      { return ErrNotSupported }
