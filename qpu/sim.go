package qpu

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"
)

// SimDevice is a simulated QPU: a job takes Base plus PerShot for each
// shot, and yields a histogram of bitstrings that depends only on the
// payload, the shot count and Seed, so that tests and demos can check
// results.
type SimDevice struct {
	Base, PerShot time.Duration
	Seed          uint64
}

// Duration is how long the device takes for shots.
func (d SimDevice) Duration(shots int) time.Duration {
	return d.Base + time.Duration(shots)*d.PerShot
}

// Run returns the histogram of shots measurements of payload: a register
// of 2 to 5 qubits, whose outcome distribution is drawn from the payload's
// hash and the seed.
func (d SimDevice) Run(payload []byte, shots int) map[string]int {
	h := fnv.New64a()
	h.Write(payload)
	sum := h.Sum64()
	rng := rand.New(rand.NewPCG(sum, d.Seed))
	bits := 2 + int(sum%4)
	weights := make([]float64, 1<<bits)
	total := 0.0
	for i := range weights {
		w := rng.Float64()
		weights[i] = w * w * w // a few outcomes dominate, as on real circuits
		total += weights[i]
	}
	n := make([]int, len(weights))
	for range shots {
		x := rng.Float64() * total
		i := 0
		for ; i < len(weights)-1 && x >= weights[i]; i++ {
			x -= weights[i]
		}
		n[i]++
	}
	counts := map[string]int{}
	for i, c := range n {
		if c > 0 {
			counts[fmt.Sprintf("%0*b", bits, i)] = c
		}
	}
	return counts
}
