package qpu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkSimulate runs circuits on 10, 16 and 20 qubits: a GHZ state
// (h, then a chain of cx), a layer of rx and rz on every qubit, and 1,000
// shots measured at the end.
func BenchmarkSimulate(b *testing.B) {
	for _, n := range []int{10, 16, 20} {
		var src strings.Builder
		fmt.Fprintf(&src, "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[%d];\ncreg c[%d];\nh q[0];\n", n, n)
		for i := 1; i < n; i++ {
			fmt.Fprintf(&src, "cx q[%d],q[%d];\n", i-1, i)
		}
		src.WriteString("rx(pi/8) q;\nrz(pi/3) q;\nmeasure q -> c;\n")
		c, err := ParseCircuit([]byte(src.String()))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("qubits=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Run(1000, rand.New(rand.NewPCG(1, 1))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
