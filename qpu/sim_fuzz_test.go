package qpu

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// FuzzParseCircuit checks that ParseCircuit never panics, that every
// error it returns names a line of the input, and that what it accepts
// (when small enough to run quickly) runs, giving every shot an outcome
// of the circuit's classical bits.
func FuzzParseCircuit(f *testing.F) {
	for _, s := range []string{
		"h q0; cx q0 q1", "h q0\ncx q0 q1\nmeasure\n", "x q[0];", "x q1; h q2; measure q1", "rx(pi/2) q0; ry(-pi/4) q1; rz(0.5*pi) q0",
		"OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\nmeasure q -> c;\n",
		"OPENQASM 2.0; qreg q[3]; creg c[3]; h q; barrier q; cz q[0], q[2]; swap q[1], q[2]; measure q -> c;",
		"OPENQASM 2.0; qreg a[1]; qreg b[2]; creg x[2]; creg y[1]; s a[0]; sdg b; t b[1]; tdg a; measure b -> x; measure a[0] -> y[0];",
		"OPENQASM 2.0; qreg q[1]; creg c[2]; h q[0]; measure q[0] -> c[0]; h q[0]; measure q[0] -> c[1];",
		"OPENQASM 2.0; // a comment\nqreg q[1]; creg c[1];\ny q[0]; // more\nmeasure q[0] -> c[0];",
		"OPENQASM 3; qubit[2] q;", "OPENQASM 2.0;\nqreg q[2]\ncreg c[2];", "gate foo a { h a; }", "rx(((pi))) q0",
		"OPENQASM 2.0; qreg b[3]; qreg a[1]; creg c[3]; cx a, b; cx b[0], a; swap a, b[2]; measure b -> c;",
		"rx(1e999) q0", "h q0\nfoo q1", "", "measure", "x q19", "x q20", "\xff", "cx q0 q0", "rx(-pi/0) q0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		c, err := ParseCircuit([]byte(src))
		if err != nil {
			var ce *CircuitError
			lines := strings.Count(src, "\n") + 1
			if !errors.As(err, &ce) || c != nil || ce.Line < 1 || ce.Line > lines || ce.Reason == "" ||
				!strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", ce.Line)) {
				t.Fatalf("ParseCircuit(%q) = %v, %#v: want a *CircuitError naming one of its %d lines", src, c, err, lines)
			}
			return
		}
		if c.Qubits < 1 || c.Qubits > MaxQubits || c.Clbits < 1 || c.Clbits > maxClbits {
			t.Fatalf("ParseCircuit(%q): %d qubits, %d classical bits", src, c.Qubits, c.Clbits)
		}
		for _, o := range c.ops {
			two := o.kind == opCX || o.kind == opCZ || o.kind == opSwap
			if o.q[0] < 0 || o.q[0] >= c.Qubits || two && (o.q[1] < 0 || o.q[1] >= c.Qubits || o.q[1] == o.q[0]) ||
				o.kind == opMeasure && (o.clbit < 0 || o.clbit >= c.Clbits) {
				t.Fatalf("ParseCircuit(%q): operation %+v outside %d qubits and %d classical bits", src, o, c.Qubits, c.Clbits)
			}
		}
		if c.Qubits > 8 || len(c.ops) > 200 {
			return
		}
		const shots = 8
		counts, err := c.Run(shots, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("Run(%q): %v", src, err)
		}
		total := 0
		for k, n := range counts {
			total += n
			if len(strings.ReplaceAll(k, " ", "")) != c.Clbits || strings.Trim(k, "01 ") != "" || strings.Count(k, " ") != len(c.cregs)-1 {
				t.Fatalf("Run(%q): outcome %q for %d classical bits in %d registers", src, k, c.Clbits, len(c.cregs))
			}
		}
		if total != shots {
			t.Fatalf("Run(%q): %d shots counted, want %d", src, total, shots)
		}
	})
}
