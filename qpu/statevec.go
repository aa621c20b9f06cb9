package qpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// The simulator keeps the register's state as 2^n complex128 amplitudes;
// qubit k is bit k of an amplitude's index (qubit 0 the least
// significant).

// apply1 applies the one-qubit gate m to qubit q.
func apply1(s []complex128, q int, m mat2) {
	stride := 1 << q
	diag := m[1] == 0 && m[2] == 0
	for base := 0; base < len(s); base += 2 * stride {
		for i := base; i < base+stride; i++ {
			a0, a1 := s[i], s[i+stride]
			if diag {
				s[i], s[i+stride] = m[0]*a0, m[3]*a1
			} else {
				s[i], s[i+stride] = m[0]*a0+m[1]*a1, m[2]*a0+m[3]*a1
			}
		}
	}
}

// apply applies a gate (not a measurement) to s.
func apply(s []complex128, o op) {
	switch o.kind {
	case opGate1:
		apply1(s, o.q[0], o.m)
	case opCX:
		c, t := 1<<o.q[0], 1<<o.q[1]
		for i := range s {
			if i&c != 0 && i&t == 0 {
				s[i], s[i|t] = s[i|t], s[i]
			}
		}
	case opCZ:
		both := 1<<o.q[0] | 1<<o.q[1]
		for i := range s {
			if i&both == both {
				s[i] = -s[i]
			}
		}
	case opSwap:
		a, b := 1<<o.q[0], 1<<o.q[1]
		for i := range s {
			if i&a != 0 && i&b == 0 {
				j := i ^ a ^ b
				s[i], s[j] = s[j], s[i]
			}
		}
	default:
		panic(fmt.Sprintf("qpu: apply of operation kind %d", o.kind))
	}
}

func norm2(a complex128) float64 { return real(a)*real(a) + imag(a)*imag(a) }

// firstMid returns the index of the first measurement that a later gate
// acts on the qubit of (a mid-circuit measurement), or -1 when every
// measurement is terminal and one simulation serves every shot.
func (c *Circuit) firstMid() int {
	last := make([]int, c.Qubits) // the last gate on each qubit
	for q := range last {
		last[q] = -1
	}
	for i, o := range c.ops {
		switch o.kind {
		case opMeasure:
		case opGate1:
			last[o.q[0]] = i
		default:
			last[o.q[0]], last[o.q[1]] = i, i
		}
	}
	for i, o := range c.ops {
		if o.kind == opMeasure && last[o.q[0]] > i {
			return i
		}
	}
	return -1
}

// Run simulates the circuit and draws shots outcomes with rng, and
// returns how often each outcome came up. An outcome is a bitstring of the
// classical bits as Qiskit writes it: bit 0 on the right, c[n-1]...c[0]
// (so "x q0" on two qubits gives "01"), and with several classical
// registers the last declared first, separated by a space ("b1b0 a0").
// Bits no measurement wrote are 0.
//
// When every measurement is terminal (no gate follows it on its qubit),
// the state is computed once and sampled shots times. Otherwise the gates
// before the first mid-circuit measurement are applied once, and each
// shot goes on from there on its own copy of the state, collapsing it at
// each measurement; the terminal measurements before that point commute
// with everything after it, and are made at the end. Run refuses work
// beyond a few seconds of computation (about 2^31 amplitude updates).
func (c *Circuit) Run(shots int, rng *rand.Rand) (map[string]int, error) {
	n := 1 << c.Qubits
	gates := 0
	for _, o := range c.ops {
		if o.kind != opMeasure {
			gates++
		}
	}
	if uint64(gates+1)*uint64(n) > maxWork {
		return nil, fmt.Errorf("too large to simulate: %d gates on %d qubits; the simulator takes at most %d gates on %d qubits", gates, c.Qubits, maxWork/uint64(n)-1, c.Qubits)
	}
	s := make([]complex128, n)
	s[0] = 1
	first := c.firstMid()
	outcomes := map[uint64]int{}
	if first < 0 {
		for _, o := range c.ops {
			if o.kind != opMeasure {
				apply(s, o)
			}
		}
		cdf := make([]float64, n)
		total := 0.0
		for i, a := range s {
			total += norm2(a)
			cdf[i] = total
		}
		for range shots {
			outcomes[record(sample(cdf, rng.Float64()*total), c.ops, 0)]++
		}
		return c.format(outcomes), nil
	}
	head, rest := c.ops[:first], c.ops[first:]
	if work := uint64(shots) * uint64(len(rest)+1) * uint64(n); shots > maxWork || work > maxWork {
		return nil, fmt.Errorf("line %d: a gate after this measurement makes each shot a simulation of its own, and %d shots of %d operations on %d qubits are too much to simulate; use fewer shots, or measure at the end",
			c.ops[first].line, shots, len(rest), c.Qubits)
	}
	for _, o := range head {
		if o.kind != opMeasure {
			apply(s, o)
		}
	}
	shot := make([]complex128, n)
	type write struct{ clbit, bit int }
	var writes []write
	for range shots {
		copy(shot, s)
		writes = writes[:0]
		for _, o := range rest {
			if o.kind != opMeasure {
				apply(shot, o)
				continue
			}
			writes = append(writes, write{o.clbit, measure(shot, o.q[0], rng.Float64())})
		}
		// The terminal measurements of head, then those of rest, in order.
		var clbits uint64
		for _, o := range head {
			if o.kind == opMeasure {
				clbits = setBit(clbits, o.clbit, measure(shot, o.q[0], rng.Float64()))
			}
		}
		for _, w := range writes {
			clbits = setBit(clbits, w.clbit, w.bit)
		}
		outcomes[clbits]++
	}
	return c.format(outcomes), nil
}

func setBit(v uint64, k, bit int) uint64 { return v&^(1<<k) | uint64(bit)<<k }

// sample returns the index whose cumulative probability first exceeds u.
func sample(cdf []float64, u float64) int {
	i := sort.Search(len(cdf), func(i int) bool { return cdf[i] > u })
	return min(i, len(cdf)-1)
}

// record returns the classical bits that the measurements among ops write
// when the register is found in basis state index.
func record(index int, ops []op, clbits uint64) uint64 {
	for _, o := range ops {
		if o.kind == opMeasure {
			clbits = setBit(clbits, o.clbit, index>>o.q[0]&1)
		}
	}
	return clbits
}

// measure measures qubit q of s with the uniform draw u, collapses s and
// returns the outcome.
func measure(s []complex128, q int, u float64) int {
	mask := 1 << q
	p1 := 0.0
	for i, a := range s {
		if i&mask != 0 {
			p1 += norm2(a)
		}
	}
	total := 0.0
	for _, a := range s {
		total += norm2(a)
	}
	bit := 0
	if u*total < p1 {
		bit = 1
	}
	keep := p1
	if bit == 0 {
		keep = total - p1
	}
	if keep <= 0 { // rounding: the outcome had no weight to speak of
		keep = total
	}
	scale := complex(1/math.Sqrt(keep), 0)
	for i := range s {
		if (i&mask != 0) == (bit == 1) {
			s[i] *= scale
		} else {
			s[i] = 0
		}
	}
	return bit
}

// format writes outcomes as bitstrings.
func (c *Circuit) format(outcomes map[uint64]int) map[string]int {
	out := make(map[string]int, len(outcomes))
	var b strings.Builder
	for v, n := range outcomes {
		b.Reset()
		for r := len(c.cregs) - 1; r >= 0; r-- {
			reg := c.cregs[r]
			for k := reg.size - 1; k >= 0; k-- {
				b.WriteByte('0' + byte(v>>(reg.offset+k)&1))
			}
			if r > 0 {
				b.WriteByte(' ')
			}
		}
		out[b.String()] += n
	}
	return out
}
