package qpu

import (
	"math/rand/v2"
	"time"
)

// SimDevice is a simulated QPU: a state-vector simulator of up to
// MaxQubits qubits that runs the circuits ParseCircuit reads. A job takes
// Base plus PerShot for each shot, whatever the circuit, as on a device
// whose shots are dominated by reset and readout (gates take nanoseconds,
// a shot hundreds of microseconds): so fair share sees device time that
// is plausible and does not depend on the host. Its counts are samples of
// the circuit's outcome distribution, drawn with a PRNG seeded by Seed
// and the job: the same job gives the same counts, wherever it runs.
type SimDevice struct {
	Base, PerShot time.Duration
	Seed          uint64
}

// Duration is how long the device takes for shots.
func (d SimDevice) Duration(shots int) time.Duration {
	return d.Base + time.Duration(shots)*d.PerShot
}

// Run runs payload for shots shots as QPU job job, and returns the
// histogram of outcomes (see Circuit.Run for the bitstrings' order). It
// returns a *CircuitError, naming the line, for a payload ParseCircuit
// refuses, and an error for a circuit too large to simulate.
func (d SimDevice) Run(job uint64, payload []byte, shots int) (map[string]int, error) {
	c, err := ParseCircuit(payload)
	if err != nil {
		return nil, err
	}
	return c.Run(shots, rand.New(rand.NewPCG(d.Seed, job)))
}
