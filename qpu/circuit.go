package qpu

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxQubits is the largest register the simulated device takes: its state
// is 2^MaxQubits complex128 amplitudes, 16 MiB.
const MaxQubits = 20

// maxClbits is the most classical bits a circuit may declare: an outcome
// is kept as one uint64.
const maxClbits = 64

// maxWork bounds the amplitude updates one simulation may make (operations
// times 2^qubits, times shots when each shot is simulated on its own), so
// that no payload holds the device for more than a few seconds of
// computation.
const maxWork = 1 << 31

// Supported lists the statements the simulator reads, as errors name them.
const Supported = "h, x, y, z, s, sdg, t, tdg, id, rx(θ), ry(θ), rz(θ), cx, cz, swap, measure, barrier"

// A Circuit is a quantum program that SimDevice runs: registers and the
// operations on them, in order. ParseCircuit makes one.
type Circuit struct {
	Qubits, Clbits int
	cregs          []register // in declaration order, for writing outcomes
	ops            []op
}

type register struct {
	name         string
	offset, size int
}

type opKind uint8

const (
	opGate1 opKind = iota // a one-qubit gate: m on q[0]
	opCX                  // control q[0], target q[1]
	opCZ
	opSwap
	opMeasure // q[0] into clbit
)

type op struct {
	kind  opKind
	m     mat2
	q     [2]int
	clbit int
	line  int
}

// mat2 is a one-qubit gate: [[m[0], m[1]], [m[2], m[3]]].
type mat2 [4]complex128

// CircuitError is a payload the simulator refuses: the line it stumbled
// on (from 1) and why.
type CircuitError struct {
	Line   int
	Reason string
}

func (e *CircuitError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Reason) }

func errorf(line int, format string, args ...any) *CircuitError {
	return &CircuitError{Line: line, Reason: fmt.Sprintf(format, args...)}
}

// ParseCircuit reads a payload in one of two forms.
//
// OpenQASM 2.0, a subset: a program that starts with "OPENQASM 2.0;",
// may include "qelib1.inc", declares qreg and creg registers (several are
// allowed; at most MaxQubits qubits and 64 classical bits in all) and then
// applies h, x, y, z, s, sdg, t, tdg, id, rx(θ), ry(θ), rz(θ), cx (or CX),
// cz and swap to qubits (q[0]) or whole registers (q, gate by gate, as
// OpenQASM broadcasts), measures (measure q[0] -> c[0]; measure q -> c)
// and ignores barrier and // comments. An angle θ is a number or an
// expression of numbers and pi with + - * / and parentheses (pi/2, -pi/4,
// 0.5*pi). Gate definitions, opaque gates, reset and if are refused.
//
// The compact form, for quick tests and demos: statements separated by
// newlines or ';', each a gate and its qubits named q0, q1, ...
// (separated by blanks or commas), as in "h q0; cx q0 q1". The register
// is as large as the highest qubit named; "measure" alone measures every
// qubit q_i into bit i, "measure q0 q2" those qubits, and a program with
// no measure measures every qubit at the end.
//
// It returns a *CircuitError, naming the line, for anything else.
func ParseCircuit(payload []byte) (*Circuit, error) {
	src := string(payload)
	qasm := false
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(stripComment(l)); l != "" {
			qasm = strings.HasPrefix(l, "OPENQASM")
			break
		}
	}
	stmts, err := statements(src, qasm)
	if err != nil {
		return nil, err
	}
	var c *Circuit
	if qasm {
		c, err = parseQASM(stmts)
	} else {
		c, err = parseCompact(stmts)
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func stripComment(l string) string {
	if i := strings.Index(l, "//"); i >= 0 {
		return l[:i]
	}
	return l
}

type statement struct {
	text      string // trimmed, without its ';'
	line, end int    // where it starts and ends
	open      bool   // OpenQASM only: the last, with no ';'
}

// statements splits src into statements, dropping // comments and blank
// ones: at each ';' in OpenQASM (where the last may lack its ';', which
// parseQASM refuses in its turn), at ';' and newlines in the compact form.
func statements(src string, qasm bool) ([]statement, error) {
	var out []statement
	var b strings.Builder
	start := 0
	for n, l := range strings.Split(src, "\n") {
		line := n + 1
		for i := 0; i < len(l); i++ {
			if c := l[i]; c >= 0x7f || c < ' ' && c != '\t' && c != '\r' {
				return nil, errorf(line, "unexpected byte %#02x: a circuit is ASCII text", c)
			}
		}
		for i, part := range strings.Split(stripComment(l), ";") {
			if i > 0 || !qasm {
				if t := strings.TrimSpace(b.String()); t != "" {
					out = append(out, statement{text: t, line: start, end: line})
				}
				b.Reset()
			}
			if strings.TrimSpace(b.String()) == "" && strings.TrimSpace(part) != "" {
				start = line
			}
			b.WriteString(part)
			b.WriteByte(' ')
		}
	}
	if t := strings.TrimSpace(b.String()); t != "" {
		out = append(out, statement{text: t, line: start, end: start, open: qasm})
	}
	return out, nil
}

// gateInfo says how a gate is written: its qubits and angles.
type gateInfo struct {
	qubits, params int
	kind           opKind
	m              func(theta float64) mat2 // one-qubit gates
}

var (
	invSqrt2 = complex(1/math.Sqrt2, 0)
	eighth   = complex(math.Cos(math.Pi/4), math.Sin(math.Pi/4)) // e^{iπ/4}
)

func fixed(m mat2) func(float64) mat2 { return func(float64) mat2 { return m } }

var gates = map[string]gateInfo{
	"id":  {1, 0, opGate1, fixed(mat2{1, 0, 0, 1})},
	"h":   {1, 0, opGate1, fixed(mat2{invSqrt2, invSqrt2, invSqrt2, -invSqrt2})},
	"x":   {1, 0, opGate1, fixed(mat2{0, 1, 1, 0})},
	"y":   {1, 0, opGate1, fixed(mat2{0, -1i, 1i, 0})},
	"z":   {1, 0, opGate1, fixed(mat2{1, 0, 0, -1})},
	"s":   {1, 0, opGate1, fixed(mat2{1, 0, 0, 1i})},
	"sdg": {1, 0, opGate1, fixed(mat2{1, 0, 0, -1i})},
	"t":   {1, 0, opGate1, fixed(mat2{1, 0, 0, eighth})},
	"tdg": {1, 0, opGate1, fixed(mat2{1, 0, 0, complex(real(eighth), -imag(eighth))})},
	"rx": {1, 1, opGate1, func(t float64) mat2 {
		c, s := complex(math.Cos(t/2), 0), complex(0, -math.Sin(t/2))
		return mat2{c, s, s, c}
	}},
	"ry": {1, 1, opGate1, func(t float64) mat2 {
		c, s := complex(math.Cos(t/2), 0), complex(math.Sin(t/2), 0)
		return mat2{c, -s, s, c}
	}},
	"rz": {1, 1, opGate1, func(t float64) mat2 {
		return mat2{complex(math.Cos(t/2), -math.Sin(t/2)), 0, 0, complex(math.Cos(t/2), math.Sin(t/2))}
	}},
	"cx":   {2, 0, opCX, nil},
	"CX":   {2, 0, opCX, nil},
	"cz":   {2, 0, opCZ, nil},
	"swap": {2, 0, opSwap, nil},
}

// builder collects a circuit's operations and checks its size.
type builder struct {
	c Circuit
}

func (b *builder) gate(line int, name string, g gateInfo, theta float64, qs []int) *CircuitError {
	o := op{kind: g.kind, line: line}
	copy(o.q[:], qs)
	if g.qubits == 2 && qs[0] == qs[1] {
		return errorf(line, "%s needs two different qubits, got qubit %d twice", name, qs[0])
	}
	if g.m != nil {
		o.m = g.m(theta)
	}
	b.c.ops = append(b.c.ops, o)
	return nil
}

// qasmRegs are the registers of an OpenQASM program, by name.
type qasmRegs struct {
	q, c map[string]register
}

func parseQASM(stmts []statement) (*Circuit, error) {
	var b builder
	regs := qasmRegs{q: map[string]register{}, c: map[string]register{}}
	for i, st := range stmts {
		word, rest := cutWord(st.text)
		if i == 0 {
			if word != "OPENQASM" || strings.TrimSpace(rest) != "2.0" && strings.TrimSpace(rest) != "2" {
				return nil, errorf(st.line, "%q: only OpenQASM 2.0 is supported (OPENQASM 2.0;)", st.text)
			}
			continue
		}
		if err := b.qasmStatement(&regs, st.line, word, rest); err != nil {
			if st.end > st.line {
				err.Reason += fmt.Sprintf(" (is a ';' missing at the end of line %d?)", st.line)
			}
			return nil, err
		}
		if st.open {
			return nil, errorf(st.line, "%q does not end with ';'", st.text)
		}
	}
	if len(stmts) == 0 {
		return nil, errorf(1, "an empty program")
	}
	measures := false
	for _, o := range b.c.ops {
		measures = measures || o.kind == opMeasure
	}
	if b.c.Qubits > 0 && !measures {
		return nil, errorf(stmts[len(stmts)-1].line, "the circuit measures nothing, so there is nothing to count; add measure q -> c;")
	}
	return b.finish()
}

func (b *builder) qasmStatement(regs *qasmRegs, line int, word, rest string) *CircuitError {
	switch word {
	case "OPENQASM":
		return errorf(line, "OPENQASM comes once, first")
	case "include":
		if f := strings.TrimSpace(rest); f != `"qelib1.inc"` {
			return errorf(line, "include %s: only \"qelib1.inc\" is supported, whose gates the simulator knows", f)
		}
		return nil
	case "qreg", "creg":
		return b.declare(regs, line, word, rest)
	case "barrier":
		_, err := b.qasmArgs(regs.q, line, "barrier", rest, -1)
		return err
	case "measure":
		from, to, ok := strings.Cut(rest, "->")
		if !ok {
			return errorf(line, "measure needs a target: measure q[0] -> c[0]; or measure q -> c;")
		}
		qs, err := b.qasmArgs(regs.q, line, "measure", from, 1)
		if err != nil {
			return err
		}
		cs, err := b.qasmArgs(regs.c, line, "measure", to, 1)
		if err != nil {
			return err
		}
		if len(qs) != len(cs) {
			return errorf(line, "measure %s -> %s: the registers differ in size (%d and %d)", strings.TrimSpace(from), strings.TrimSpace(to), len(qs), len(cs))
		}
		for k := range qs {
			b.c.ops = append(b.c.ops, op{kind: opMeasure, q: [2]int{qs[k][0]}, clbit: cs[k][0], line: line})
		}
		return nil
	case "gate", "opaque":
		return errorf(line, "%s definitions are not supported; use the gates %s", word, Supported)
	case "reset", "if":
		return errorf(line, "%s is not supported; supported: %s", word, Supported)
	}
	name, params, args, err := splitGate(line, word, rest)
	if err != nil {
		return err
	}
	g, ok := gates[name]
	if !ok {
		return errorf(line, "unknown gate %q; supported: %s", name, Supported)
	}
	theta, err := gateParams(line, name, g, params)
	if err != nil {
		return err
	}
	sets, err := b.qasmArgs(regs.q, line, name, args, g.qubits)
	if err != nil {
		return err
	}
	for _, qs := range sets {
		if err := b.gate(line, name, g, theta, qs); err != nil {
			return err
		}
	}
	return nil
}

// declare reads qreg NAME[N] or creg NAME[N].
func (b *builder) declare(regs *qasmRegs, line int, kind, rest string) *CircuitError {
	name, idx, whole, err := regRef(line, rest)
	if err != nil {
		return err
	}
	if whole || idx < 1 {
		return errorf(line, "%s %s: give a name and a size of at least 1, as in %s %s[2]", kind, strings.TrimSpace(rest), kind, name)
	}
	if _, dup := regs.q[name]; dup {
		return errorf(line, "register %s is declared twice", name)
	}
	if _, dup := regs.c[name]; dup {
		return errorf(line, "register %s is declared twice", name)
	}
	if kind == "qreg" {
		if b.c.Qubits+idx > MaxQubits {
			return errorf(line, "qreg %s[%d] makes %d qubits; the simulator takes at most %d (2^%d amplitudes, 16 MiB)", name, idx, b.c.Qubits+idx, MaxQubits, MaxQubits)
		}
		regs.q[name] = register{name, b.c.Qubits, idx}
		b.c.Qubits += idx
		return nil
	}
	if b.c.Clbits+idx > maxClbits {
		return errorf(line, "creg %s[%d] makes %d classical bits; the simulator takes at most %d", name, idx, b.c.Clbits+idx, maxClbits)
	}
	r := register{name, b.c.Clbits, idx}
	regs.c[name] = r
	b.c.cregs = append(b.c.cregs, r)
	b.c.Clbits += idx
	return nil
}

// qasmArgs reads the comma-separated operands of an operation: each a
// bit (q[0]) or a whole register (q). With want > 0 operands there must be
// exactly that many, and whole registers (all of one size) broadcast: the
// result lists, for each application, the bits it acts on. With want < 0
// (barrier) any number is allowed and only checked.
func (b *builder) qasmArgs(regs map[string]register, line int, what, s string, want int) ([][]int, *CircuitError) {
	fields := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		fields = nil
	}
	if want > 0 && len(fields) != want {
		return nil, errorf(line, "%s takes %d operand%s, got %d (%q)", what, want, plural(want), len(fields), strings.TrimSpace(s))
	}
	if want < 0 && len(fields) == 0 {
		return nil, errorf(line, "%s needs operands", what)
	}
	size := 0 // of the whole registers, all alike; 0 before the first
	type operand struct {
		r     register
		idx   int
		whole bool
	}
	ops := make([]operand, len(fields))
	for i, f := range fields {
		name, idx, whole, err := regRef(line, f)
		if err != nil {
			return nil, err
		}
		r, ok := regs[name]
		if !ok {
			return nil, errorf(line, "%s: no register named %s; declare it first", what, name)
		}
		if !whole && idx >= r.size {
			return nil, errorf(line, "%s[%d] is out of range: %s has %d bit%s, %s[0] to %s[%d]", name, idx, name, r.size, plural(r.size), name, name, r.size-1)
		}
		if whole {
			if size > 0 && r.size != size {
				return nil, errorf(line, "%s: registers of different sizes (%d and %d) cannot broadcast together", what, size, r.size)
			}
			size = r.size
		}
		ops[i] = operand{r, idx, whole}
	}
	out := make([][]int, max(size, 1))
	for k := range out {
		out[k] = make([]int, len(ops))
		for i, o := range ops {
			if o.whole {
				out[k][i] = o.r.offset + k
			} else {
				out[k][i] = o.r.offset + o.idx
			}
		}
	}
	return out, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// regRef reads NAME or NAME[INDEX].
func regRef(line int, s string) (name string, idx int, whole bool, err *CircuitError) {
	s = strings.TrimSpace(s)
	name, rest, indexed := strings.Cut(s, "[")
	name = strings.TrimSpace(name)
	if !isIdent(name) {
		return "", 0, false, errorf(line, "%q is not a register name (a letter, then letters, digits or _)", name)
	}
	if !indexed {
		return name, 0, true, nil
	}
	num, ok := strings.CutSuffix(strings.TrimSpace(rest), "]")
	num = strings.TrimSpace(num)
	n, perr := strconv.Atoi(num)
	if !ok || perr != nil || n < 0 || !isDigits(num) {
		return "", 0, false, errorf(line, "%q: write a bit as %s[INDEX], INDEX from 0", s, name)
	}
	return name, n, false, nil
}

func isIdent(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != "" && len(s) <= 9
}

// cutWord splits off the first word of s: up to a blank or '('.
func cutWord(s string) (word, rest string) {
	i := strings.IndexAny(s, " \t\r(")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// splitGate splits a gate application into its name, its parameters
// (between parentheses, if any) and its operands.
func splitGate(line int, word, rest string) (name, params, args string, err *CircuitError) {
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "(") {
		return word, "", rest, nil
	}
	depth := 0
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return word, rest[1:i], rest[i+1:], nil
			}
		}
	}
	return "", "", "", errorf(line, "%s%s: unbalanced parentheses", word, rest)
}

// gateParams reads the angle a gate takes, if any.
func gateParams(line int, name string, g gateInfo, params string) (float64, *CircuitError) {
	if g.params == 0 {
		if strings.TrimSpace(params) != "" {
			return 0, errorf(line, "%s takes no angle, got (%s)", name, params)
		}
		return 0, nil
	}
	if strings.TrimSpace(params) == "" {
		return 0, errorf(line, "%s takes an angle, as in %s(pi/2) q[0]", name, name)
	}
	theta, err := evalAngle(params)
	if err != "" {
		return 0, errorf(line, "%s(%s): %s", name, params, err)
	}
	return theta, nil
}

func (b *builder) finish() (*Circuit, error) {
	if b.c.Qubits == 0 {
		return nil, errorf(1, "no qubits: declare some, as in qreg q[2];")
	}
	return &b.c, nil
}

// parseCompact reads the compact form (see ParseCircuit).
func parseCompact(stmts []statement) (*Circuit, error) {
	var b builder
	measured := false
	type pending struct {
		line  int
		name  string
		g     gateInfo
		theta float64
		qs    []int
		all   bool // measure, alone
	}
	var prog []pending
	for _, st := range stmts {
		word, rest := cutWord(st.text)
		name, params, args, err := splitGate(st.line, word, rest)
		if err != nil {
			return nil, err
		}
		var qs []int
		for _, f := range strings.FieldsFunc(args, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\r' }) {
			q, err := compactQubit(st.line, f)
			if err != nil {
				return nil, err
			}
			qs = append(qs, q)
			b.c.Qubits = max(b.c.Qubits, q+1)
		}
		switch name {
		case "barrier":
			continue
		case "measure":
			if params != "" {
				return nil, errorf(st.line, "measure takes no angle")
			}
			measured = true
			prog = append(prog, pending{line: st.line, name: name, qs: qs, all: len(qs) == 0})
			continue
		case "OPENQASM":
			return nil, errorf(st.line, "OPENQASM comes once, first")
		}
		g, ok := gates[name]
		if !ok {
			return nil, errorf(st.line, "unknown gate %q; supported: %s", name, Supported)
		}
		theta, err := gateParams(st.line, name, g, params)
		if err != nil {
			return nil, err
		}
		if len(qs) != g.qubits {
			return nil, errorf(st.line, "%s takes %d qubit%s, got %d (%q)", name, g.qubits, plural(g.qubits), len(qs), strings.TrimSpace(args))
		}
		prog = append(prog, pending{line: st.line, name: name, g: g, theta: theta, qs: qs})
	}
	if b.c.Qubits == 0 {
		line := 1
		if len(stmts) > 0 {
			line = stmts[0].line
		}
		return nil, errorf(line, "no qubits: name some, as in h q0; cx q0 q1 (or write OpenQASM 2.0)")
	}
	n := b.c.Qubits
	b.c.Clbits = n
	b.c.cregs = []register{{"c", 0, n}}
	for _, p := range prog {
		switch {
		case p.name != "measure":
			if err := b.gate(p.line, p.name, p.g, p.theta, p.qs); err != nil {
				return nil, err
			}
		case p.all:
			for q := range n {
				b.c.ops = append(b.c.ops, op{kind: opMeasure, q: [2]int{q}, clbit: q, line: p.line})
			}
		default:
			for _, q := range p.qs {
				b.c.ops = append(b.c.ops, op{kind: opMeasure, q: [2]int{q}, clbit: q, line: p.line})
			}
		}
	}
	if !measured {
		line := stmts[len(stmts)-1].line
		for q := range n {
			b.c.ops = append(b.c.ops, op{kind: opMeasure, q: [2]int{q}, clbit: q, line: line})
		}
	}
	return b.finish()
}

// compactQubit reads a qubit of the compact form: q0, q1, ... (or q[0]).
func compactQubit(line int, s string) (int, *CircuitError) {
	num, ok := strings.CutPrefix(s, "q")
	if ok && strings.HasPrefix(num, "[") && strings.HasSuffix(num, "]") {
		num = num[1 : len(num)-1]
	}
	n, err := strconv.Atoi(num)
	if !ok || err != nil || !isDigits(num) {
		return 0, errorf(line, "%q is not a qubit: name qubits q0, q1, ... (or write OpenQASM 2.0)", s)
	}
	if n >= MaxQubits {
		return 0, errorf(line, "%s: the simulator takes at most %d qubits, q0 to q%d (2^%d amplitudes, 16 MiB)", s, MaxQubits, MaxQubits-1, MaxQubits)
	}
	return n, nil
}

// evalAngle evaluates an angle: numbers and pi, + - * /, unary minus and
// parentheses. It returns a reason when it cannot.
func evalAngle(s string) (float64, string) {
	p := exprParser{s: s}
	v := p.sum(0)
	if p.err == "" {
		p.blanks()
		if p.i < len(p.s) {
			p.err = fmt.Sprintf("unexpected %q", p.s[p.i:])
		}
	}
	if p.err == "" && (math.IsInf(v, 0) || math.IsNaN(v)) {
		p.err = "the angle is not a finite number"
	}
	if p.err != "" {
		return 0, p.err + " (write angles as numbers and pi with + - * / and parentheses, as in pi/2 or -0.5*pi)"
	}
	return v, ""
}

type exprParser struct {
	s   string
	i   int
	err string
}

// maxDepth bounds nesting, so that no input exhausts the stack.
const maxDepth = 32

func (p *exprParser) blanks() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *exprParser) sum(depth int) float64 {
	v := p.product(depth)
	for p.err == "" {
		p.blanks()
		if p.i >= len(p.s) || p.s[p.i] != '+' && p.s[p.i] != '-' {
			return v
		}
		op := p.s[p.i]
		p.i++
		w := p.product(depth)
		if op == '+' {
			v += w
		} else {
			v -= w
		}
	}
	return v
}

func (p *exprParser) product(depth int) float64 {
	v := p.unary(depth)
	for p.err == "" {
		p.blanks()
		if p.i >= len(p.s) || p.s[p.i] != '*' && p.s[p.i] != '/' {
			return v
		}
		op := p.s[p.i]
		p.i++
		w := p.unary(depth)
		if op == '*' {
			v *= w
		} else if w == 0 {
			p.err = "division by zero"
		} else {
			v /= w
		}
	}
	return v
}

func (p *exprParser) unary(depth int) float64 {
	if depth > maxDepth {
		p.err = "nested too deeply"
		return 0
	}
	p.blanks()
	if p.i >= len(p.s) {
		p.err = "missing a number"
		return 0
	}
	switch c := p.s[p.i]; {
	case c == '-':
		p.i++
		return -p.unary(depth + 1)
	case c == '+':
		p.i++
		return p.unary(depth + 1)
	case c == '(':
		p.i++
		v := p.sum(depth + 1)
		p.blanks()
		if p.err == "" && (p.i >= len(p.s) || p.s[p.i] != ')') {
			p.err = "missing ')'"
		}
		p.i++
		return v
	case strings.HasPrefix(p.s[p.i:], "pi"):
		p.i += 2
		return math.Pi
	case c >= '0' && c <= '9' || c == '.':
		j := p.i
		for j < len(p.s) && (p.s[j] >= '0' && p.s[j] <= '9' || p.s[j] == '.') {
			j++
		}
		if j < len(p.s) && (p.s[j] == 'e' || p.s[j] == 'E') {
			k := j + 1
			if k < len(p.s) && (p.s[k] == '+' || p.s[k] == '-') {
				k++
			}
			if k < len(p.s) && p.s[k] >= '0' && p.s[k] <= '9' {
				for j = k; j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9'; j++ {
				}
			}
		}
		v, err := strconv.ParseFloat(p.s[p.i:j], 64)
		if errors.Is(err, strconv.ErrRange) {
			p.err = fmt.Sprintf("%q is out of range", p.s[p.i:j])
			return 0
		}
		if err != nil {
			p.err = fmt.Sprintf("%q is not a number", p.s[p.i:j])
			return 0
		}
		p.i = j
		return v
	}
	p.err = fmt.Sprintf("unexpected %q", p.s[p.i:])
	return 0
}
