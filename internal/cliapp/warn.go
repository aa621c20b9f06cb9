package cliapp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/internal/signame"
)

// defaultWarnBefore is --signal's time when it gives none, as sbatch's.
const defaultWarnBefore = 60

// parseWarn reads --signal SIG[@SECS] (sbatch --signal): the signal to
// send the job SECS seconds (default 60, at most api.MaxWarnBefore) before
// its walltime ends, as the API names it. Slurm's B: (the batch shell
// alone) is refused rather than read as "every process", which would kill
// the steps that do not trap the signal; R: (reservations) too.
func parseWarn(s string) (sig string, before int, err error) {
	if p, _, ok := strings.Cut(s, ":"); ok && p != "" && strings.Trim(strings.ToUpper(p), "BR") == "" {
		return "", 0, fmt.Errorf("%q: Strata sends the signal to every process of the job, so %s: (Slurm's batch shell or reservation variant) is not supported: drop it, and trap the signal where it must not kill", s, p)
	}
	name, secs, timed := strings.Cut(s, "@")
	v, err := signame.Parse(name)
	if err != nil {
		return "", 0, fmt.Errorf("%w; as in --signal USR1@120", err)
	}
	before = defaultWarnBefore
	if timed {
		n, err := strconv.Atoi(secs)
		if err != nil || n < 0 || n > api.MaxWarnBefore {
			return "", 0, fmt.Errorf("%q: the time before the walltime ends must be 0 to %d seconds, as in USR1@120", s, api.MaxWarnBefore)
		}
		before = n
	}
	return signame.Short(v), before, nil
}
