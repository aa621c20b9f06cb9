package qpu

import (
	"errors"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// state parses src and returns the state its gates leave, measurements
// left out.
func state(t *testing.T, src string) []complex128 {
	t.Helper()
	c, err := ParseCircuit([]byte(src))
	if err != nil {
		t.Fatalf("ParseCircuit(%q): %v", src, err)
	}
	s := make([]complex128, 1<<c.Qubits)
	s[0] = 1
	for _, o := range c.ops {
		if o.kind != opMeasure {
			apply(s, o)
		}
	}
	return s
}

// samePhase reports whether a and b are the same state up to a global
// phase.
func samePhase(a, b []complex128) bool {
	if len(a) != len(b) {
		return false
	}
	var phase complex128
	for i := range a {
		if cmplx.Abs(b[i]) > 1e-9 {
			phase = a[i] / b[i]
			break
		}
	}
	if math.Abs(cmplx.Abs(phase)-1) > 1e-9 {
		return false
	}
	for i := range a {
		if cmplx.Abs(a[i]-phase*b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

func same(a, b []complex128) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if cmplx.Abs(a[i]-b[i]) > 1e-9 {
			return false
		}
	}
	return true
}

const r2 = 1 / math.Sqrt2

func TestGates(t *testing.T) {
	half := complex(0.5, 0)
	for _, tc := range []struct {
		name, src string
		want      []complex128
		phase     bool // equal up to a global phase only
	}{
		{"x flips", "x q0", []complex128{0, 1}, false},
		{"x twice", "x q0; x q0", []complex128{1, 0}, false},
		{"h superposes", "h q0", []complex128{r2, r2}, false},
		{"h on |1>", "x q0; h q0", []complex128{r2, -r2}, false},
		{"h z h is x", "h q0; z q0; h q0", []complex128{0, 1}, false},
		{"h h is identity", "h q0; h q0", []complex128{1, 0}, false},
		{"y", "y q0", []complex128{0, 1i}, false},
		{"z on |1>", "x q0; z q0", []complex128{0, -1}, false},
		{"s s is z", "x q0; s q0; s q0", []complex128{0, -1}, false},
		{"s", "x q0; s q0", []complex128{0, 1i}, false},
		{"sdg undoes s", "h q0; s q0; sdg q0", []complex128{r2, r2}, false},
		{"t t is s", "x q0; t q0; t q0", []complex128{0, 1i}, false},
		{"tdg undoes t", "h q0; t q0; tdg q0", []complex128{r2, r2}, false},
		{"id", "x q0; id q0", []complex128{0, 1}, false},
		{"rx(pi) is x up to phase", "rx(pi) q0", []complex128{0, 1}, true},
		{"rx(pi) exactly", "rx(pi) q0", []complex128{0, -1i}, false},
		{"ry(pi/2)", "ry(pi/2) q0", []complex128{r2, r2}, false},
		{"ry(-pi/2)", "ry(-pi/2) q0", []complex128{r2, -r2}, false},
		{"rz(pi) is z up to phase", "h q0; rz(pi) q0; h q0", []complex128{0, 1}, true},
		{"rx(0.5*pi) twice is x up to phase", "rx(0.5*pi) q0; rx(2*pi/4) q0", []complex128{0, 1}, true},
		{"rz(2*pi) is -1", "rz(2*pi) q0", []complex128{-1, 0}, false},
		// Two qubits: index bit k is qubit k.
		{"x q1", "x q1", []complex128{0, 0, 1, 0}, false},
		{"cx on |01>", "x q0; cx q0 q1", []complex128{0, 0, 0, 1}, false},
		{"cx with control 0", "x q1; cx q0 q1", []complex128{0, 0, 1, 0}, false},
		{"bell", "h q0; cx q0 q1", []complex128{r2, 0, 0, r2}, false},
		{"cz", "h q0; h q1; cz q0 q1", []complex128{half, half, half, -half}, false},
		{"swap", "x q0; swap q0 q1", []complex128{0, 0, 1, 0}, false},
		{"swap symmetric", "x q0; swap q1, q0", []complex128{0, 0, 1, 0}, false},
		{"ghz", "h q0; cx q0 q1; cx q1 q2", []complex128{r2, 0, 0, 0, 0, 0, 0, r2}, false},
		// OpenQASM: broadcasting, several registers.
		{"qasm bell", "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\nmeasure q -> c;", []complex128{r2, 0, 0, r2}, false},
		{"qasm broadcast", "OPENQASM 2.0; qreg q[2]; creg c[2]; x q; measure q -> c;", []complex128{0, 0, 0, 1}, false},
		{"qasm broadcast cx", "OPENQASM 2.0; qreg a[2]; qreg b[2]; creg c[4]; x a; cx a, b; measure a[0] -> c[0];", []complex128{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, false},
		{"qasm broadcast one control", "OPENQASM 2.0; qreg q[1]; qreg r[2]; creg c[1]; x q[0]; cx q[0], r; measure q[0] -> c[0];", []complex128{0, 0, 0, 0, 0, 0, 0, 1}, false},
		{"qasm registers in order", "OPENQASM 2.0; qreg a[1]; qreg b[1]; creg c[1]; x b[0]; measure b[0] -> c[0];", []complex128{0, 0, 1, 0}, false},
		{"qasm angle expressions", "OPENQASM 2.0; qreg q[1]; creg c[1]; rx(-(-pi)) q[0]; ry(+pi - pi) q[0]; rz(1e-300) q[0]; measure q -> c;", []complex128{0, -1i}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := state(t, tc.src)
			if ok := same(got, tc.want) || tc.phase && samePhase(got, tc.want); !ok {
				t.Errorf("%s: state %v, want %v", tc.src, got, tc.want)
			}
		})
	}
}

func run(t *testing.T, src string, shots int, seed uint64) map[string]int {
	t.Helper()
	c, err := ParseCircuit([]byte(src))
	if err != nil {
		t.Fatalf("ParseCircuit(%q): %v", src, err)
	}
	counts, err := c.Run(shots, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatalf("Run(%q): %v", src, err)
	}
	total := 0
	for _, n := range counts {
		total += n
	}
	if total != shots {
		t.Fatalf("Run(%q): %d shots counted, want %d", src, total, shots)
	}
	return counts
}

// near checks that n of shots is within 5 points of share.
func near(t *testing.T, what string, n, shots int, share float64) {
	t.Helper()
	if got := float64(n) / float64(shots); math.Abs(got-share) > 0.05 {
		t.Errorf("%s: %d of %d shots (%.3f), want about %.2f", what, n, shots, got, share)
	}
}

func TestSampling(t *testing.T) {
	const shots = 4000
	for _, tc := range []struct {
		name, src string
		want      map[string]float64 // outcome → share; no others may come up
	}{
		{"bell, compact", "h q0; cx q0 q1", map[string]float64{"00": 0.5, "11": 0.5}},
		{"bell, the demo's", "h q0\ncx q0 q1\nmeasure\n", map[string]float64{"00": 0.5, "11": 0.5}},
		{"bell, qasm", "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\nh q[0];\ncx q[0],q[1];\nmeasure q[0] -> c[0];\nmeasure q[1] -> c[1];\n", map[string]float64{"00": 0.5, "11": 0.5}},
		{"ghz on 3", "OPENQASM 2.0; qreg q[3]; creg c[3]; h q[0]; cx q[0],q[1]; cx q[1],q[2]; measure q -> c;", map[string]float64{"000": 0.5, "111": 0.5}},
		{"x is certain", "x q0", map[string]float64{"1": 1}},
		// c[n-1]...c[0]: qubit 0 on the right.
		{"bit order", "x q0; id q2", map[string]float64{"001": 1}},
		{"bit order, qasm", "OPENQASM 2.0; qreg q[2]; creg c[2]; x q[0]; measure q[0] -> c[1]; measure q[1] -> c[0];", map[string]float64{"10": 1}},
		{"unmeasured bits are 0", "OPENQASM 2.0; qreg q[2]; creg c[3]; x q; measure q[1] -> c[2];", map[string]float64{"100": 1}},
		{"registers, last declared first", "OPENQASM 2.0; qreg q[2]; creg a[1]; creg b[2]; x q[1]; measure q[0] -> a[0]; measure q[1] -> b[1];", map[string]float64{"10 0": 1}},
		{"measure some, compact", "x q1; h q2; measure q1", map[string]float64{"010": 1}},
		{"ry(pi/3) is 1/4 of 1", "ry(pi/3) q0", map[string]float64{"0": 0.75, "1": 0.25}},
		{"h z h is x", "h q0; z q0; h q0", map[string]float64{"1": 1}},
		// Mid-circuit measurement collapses the state, shot by shot.
		{"measure then flip", "OPENQASM 2.0; qreg q[1]; creg c[2]; h q[0]; measure q[0] -> c[0]; x q[0]; measure q[0] -> c[1];", map[string]float64{"01": 0.5, "10": 0.5}},
		{"measure breaks interference", "OPENQASM 2.0; qreg q[1]; creg c[2]; h q[0]; measure q[0] -> c[0]; h q[0]; measure q[0] -> c[1];", map[string]float64{"00": 0.25, "01": 0.25, "10": 0.25, "11": 0.25}},
		{"terminal measure before a mid one", "OPENQASM 2.0; qreg q[2]; creg c[2]; h q[0]; cx q[0],q[1]; measure q[1] -> c[1]; measure q[0] -> c[0]; x q[0];", map[string]float64{"00": 0.5, "11": 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := run(t, tc.src, shots, 7)
			for k, n := range counts {
				share, ok := tc.want[k]
				if !ok {
					t.Errorf("outcome %q came up %d times; want only %v", k, n, tc.want)
					continue
				}
				near(t, k, n, shots, share)
			}
			for k, share := range tc.want {
				if _, ok := counts[k]; !ok && share > 0 {
					t.Errorf("outcome %q never came up: %v", k, counts)
				}
			}
		})
	}
}

func TestSimDevice(t *testing.T) {
	d := SimDevice{Base: 200 * time.Millisecond, PerShot: 100 * time.Microsecond, Seed: 7}
	if got := d.Duration(1000); got != 300*time.Millisecond {
		t.Errorf("duration of 1000 shots %s, want 300ms", got)
	}
	bell := []byte("h q0; cx q0 q1")
	a, err := d.Run(1, bell, 4000)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := d.Run(1, bell, 4000); err != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("the same job gave %v, then %v, %v", a, b, err)
	}
	if c, _ := d.Run(2, bell, 4000); reflect.DeepEqual(a, c) {
		t.Error("two jobs gave the same histogram")
	}
	if c, _ := (SimDevice{Seed: 8}).Run(1, bell, 4000); reflect.DeepEqual(a, c) {
		t.Error("two seeds gave the same histogram")
	}
	if len(a) != 2 || a["00"]+a["11"] != 4000 {
		t.Errorf("a Bell pair gave %v", a)
	}
	_, err = d.Run(1, []byte("h q0\nfoo q1"), 10)
	var ce *CircuitError
	if !errors.As(err, &ce) || ce.Line != 2 || err.Error() != `line 2: unknown gate "foo"; supported: `+Supported {
		t.Errorf("a bad payload: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "OPENQASM 2.0;\ninclude \"qelib1.inc\";\nqreg q[2];\ncreg c[2];\n"
	for _, tc := range []struct {
		src  string
		line int
		want string
	}{
		{"", 1, "no qubits"},
		{"// nothing\n\n", 1, "no qubits"},
		{"measure", 1, "no qubits"},
		{"h q0\nfoo q1", 2, `unknown gate "foo"; supported: h, x, y, z, s, sdg, t, tdg, id, rx(θ), ry(θ), rz(θ), cx, cz, swap, measure, barrier`},
		{"h q0; cx q0", 1, `cx takes 2 qubits, got 1 ("q0")`},
		{"h q0 q1", 1, "h takes 1 qubit, got 2"},
		{"cx q0 q0", 1, "cx needs two different qubits, got qubit 0 twice"},
		{"h a0", 1, `"a0" is not a qubit: name qubits q0, q1, ...`},
		{"h q-1", 1, `"q-1" is not a qubit`},
		{"x q20", 1, "q20: the simulator takes at most 20 qubits, q0 to q19"},
		{"x q99999999999", 1, "is not a qubit"},
		{"rx q0", 1, "rx takes an angle, as in rx(pi/2) q[0]"},
		{"rx() q0", 1, "rx takes an angle"},
		{"h(pi) q0", 1, "h takes no angle, got (pi)"},
		{"rx(pi/0) q0", 1, "rx(pi/0): division by zero"},
		{"rx(pi q0", 1, "unbalanced parentheses"},
		{"rx(2pi) q0", 1, `unexpected "pi"`},
		{"rx(tau) q0", 1, `unexpected "tau"`},
		{"rx(1e999) q0", 1, `"1e999" is out of range`},
		{"rx(1e308*10) q0", 1, "not a finite number"},
		{"rx(1.2.3) q0", 1, `"1.2.3" is not a number`},
		{"rx(((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))) q0", 1, "nested too deeply"},
		{"h q0\n\n\nh \xff", 4, "unexpected byte 0xff"},
		{"OPENQASM 3;\nqubit[2] q;", 1, `"OPENQASM 3": only OpenQASM 2.0 is supported`},
		{"OPENQASM 2.0;\nqreg q[2]\ncreg c[2];", 2, `is a ';' missing at the end of line 2?`},
		{head + "h q[0]", 5, `"h q[0]" does not end with ';'`},
		{head + "h q[0];\nfoo q[1];", 6, `unknown gate "foo"`},
		{head + "h q[2];", 5, "q[2] is out of range: q has 2 bits, q[0] to q[1]"},
		{head + "h r[0];", 5, "h: no register named r; declare it first"},
		{head + "cx q[0];", 5, "cx takes 2 operands, got 1"},
		{head + "cx q[1], q[1];", 5, "two different qubits"},
		{head + "measure q[0];", 5, "measure needs a target"},
		{head + "measure q -> c[0];", 5, "the registers differ in size (2 and 1)"},
		{head + "measure q[0] -> d[0];", 5, "no register named d"},
		{head + "h q[0];", 5, "the circuit measures nothing"},
		{head + "reset q[0];", 5, "reset is not supported"},
		{head + "if (c==1) x q[0];", 5, "if is not supported"},
		{head + "gate foo a { h a; }", 5, "gate definitions are not supported"},
		{head + "OPENQASM 2.0;", 5, "OPENQASM comes once, first"},
		{"OPENQASM 2.0;\ninclude \"other.inc\";", 2, `include "other.inc": only "qelib1.inc"`},
		{"OPENQASM 2.0;\nqreg q[21];", 2, "qreg q[21] makes 21 qubits; the simulator takes at most 20"},
		{"OPENQASM 2.0;\nqreg q[10];\nqreg r[11];", 3, "makes 21 qubits"},
		{"OPENQASM 2.0;\nqreg q[0];", 2, "a size of at least 1"},
		{"OPENQASM 2.0;\nqreg q;", 2, "a size of at least 1"},
		{"OPENQASM 2.0;\nqreg q[2];\nqreg q[1];", 3, "register q is declared twice"},
		{"OPENQASM 2.0;\ncreg c[65];", 2, "at most 64"},
		{"OPENQASM 2.0;\nqreg 2q[1];", 2, "is not a register name"},
		{"OPENQASM 2.0;\nqreg q[1];\ncreg c[1];\nh q[x];", 4, "write a bit as q[INDEX]"},
		{"OPENQASM 2.0;\nqreg a[2];\nqreg b[3];\ncreg c[1];\ncx a, b;", 5, "registers of different sizes (2 and 3)"},
		{"OPENQASM 2.0;\nqreg q[1];\nbarrier;", 3, "barrier needs operands"},
		{"OPENQASM 2.0;\nqreg a[1];\nqreg b[3];\ncreg c[1];\ncx a, b;", 5, "registers of different sizes (1 and 3)"},
		{"OPENQASM 2.0;\nqreg b[3];\nqreg a[1];\ncreg c[3];\nmeasure a -> c;", 5, "the registers differ in size (1 and 3)"},
		{"OPENQASM 2.0;\nqreg b[3];\nqreg a[1];\ncreg c[1];\ncreg d[3];\nmeasure b -> c;", 6, "the registers differ in size (3 and 1)"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			c, err := ParseCircuit([]byte(tc.src))
			var ce *CircuitError
			if !errors.As(err, &ce) || c != nil {
				t.Fatalf("ParseCircuit(%q) = %v, %v; want a *CircuitError", tc.src, c, err)
			}
			if ce.Line != tc.line || !strings.Contains(ce.Reason, tc.want) || !strings.HasPrefix(err.Error(), "line ") {
				t.Errorf("ParseCircuit(%q): %v; want line %d: ...%s...", tc.src, err, tc.line, tc.want)
			}
		})
	}
}

func TestTooLarge(t *testing.T) {
	// 20 qubits and 3,000 gates: past the work bound.
	var b strings.Builder
	for i := range 3000 {
		b.WriteString("h q" + string(rune('0'+i%10)) + "\n")
	}
	b.WriteString("x q19\n")
	c, err := ParseCircuit([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(10, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "too large to simulate: 3001 gates on 20 qubits") {
		t.Errorf("3001 gates on 20 qubits: %v", err)
	}
	// Mid-circuit measurement with many shots on many qubits.
	c, err = ParseCircuit([]byte("h q0; measure q0; h q0; x q19"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Run(100000, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "line 1: a gate after this measurement") {
		t.Errorf("mid-circuit measurement, 100000 shots on 20 qubits: %v", err)
	}
}
