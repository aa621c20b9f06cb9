package instance

import (
	"fmt"
	"strconv"
	"strings"
)

// Policy is a queue policy: how many of the first pending jobs that cannot
// start now are given a planned start, and whether later jobs may start
// ahead of them when they do not delay those plans.
type Policy struct {
	Name     string // as ParsePolicy reads it
	Depth    int    // jobs protected by a planned start; Unlimited for all
	Backfill bool   // later jobs may start early if they delay no planned start
}

// Unlimited is the Depth of conservative backfilling.
const Unlimited = int(^uint(0) >> 1)

// The policies, by name.
var (
	FCFS         = Policy{Name: "fcfs", Depth: 1, Backfill: false}
	EASY         = Policy{Name: "easy", Depth: 1, Backfill: true}
	Conservative = Policy{Name: "conservative", Depth: Unlimited, Backfill: true}
)

// Hybrid returns hybrid:n, Fluxion's reservation depth n (n >= 1).
func Hybrid(n int) Policy {
	return Policy{Name: "hybrid:" + strconv.Itoa(n), Depth: n, Backfill: true}
}

// ParsePolicy reads fcfs, easy, conservative or hybrid:N (N >= 1).
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "fcfs":
		return FCFS, nil
	case "easy":
		return EASY, nil
	case "conservative":
		return Conservative, nil
	}
	if n, ok := strings.CutPrefix(s, "hybrid:"); ok {
		d, err := strconv.Atoi(n)
		if err != nil || d < 1 || d > 1<<20 {
			return Policy{}, fmt.Errorf("instance: bad policy %q: hybrid:N needs a whole number N from 1 to 1048576", s)
		}
		return Hybrid(d), nil
	}
	return Policy{}, fmt.Errorf("instance: unknown policy %q: use fcfs, easy, conservative or hybrid:N", s)
}
