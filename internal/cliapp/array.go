package cliapp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-hpc/strata/api"
)

// maxArrayIndex bounds a task index: indexes are written into file names
// and environment variables, and Slurm's own bound is far lower.
const maxArrayIndex = 99_999_999

// parseArray reads a job array spec as Slurm's --array does: a comma list
// of N, N-M or N-M:STEP items, with an optional %LIMIT at the end (how many
// tasks may run at once): "1-1000%50", "1,3,5-9:2", "0-15:4%2". It returns
// the task indexes in increasing order, each once, and the limit (0: none).
func parseArray(s string) ([]int, int, error) {
	list, lim, hasLim := strings.Cut(s, "%")
	limit := 0
	if hasLim {
		n, err := strconv.Atoi(lim)
		if err != nil || n < 1 || !allDigitsASCII(lim) {
			return nil, 0, fmt.Errorf("%q: the limit after %% must be a whole number from 1, as in 1-100%%10", s)
		}
		limit = n
	}
	if list == "" {
		return nil, 0, fmt.Errorf("%q names no task: give indexes as in 1-100, 1,3,5 or 0-30:10", s)
	}
	seen := map[int]bool{}
	var tasks []int
	for _, item := range strings.Split(list, ",") {
		rng, step, hasStep := strings.Cut(item, ":")
		lo, hi, isRange := strings.Cut(rng, "-")
		from, err := arrayIndex(s, lo)
		if err != nil {
			return nil, 0, err
		}
		to, inc := from, 1
		if isRange {
			if to, err = arrayIndex(s, hi); err != nil {
				return nil, 0, err
			}
			if to < from {
				return nil, 0, fmt.Errorf("%q: range %s ends before it starts", s, rng)
			}
		}
		if hasStep {
			n, err := strconv.Atoi(step)
			if err != nil || n < 1 || !allDigitsASCII(step) || !isRange {
				return nil, 0, fmt.Errorf("%q: a step follows a range and is a whole number from 1, as in 1-9:2", s)
			}
			inc = n
		}
		for i := from; i <= to; i += inc {
			if !seen[i] {
				if len(tasks) == api.MaxArrayTasks {
					return nil, 0, fmt.Errorf("%q makes more than %d tasks: split the work into several arrays", s, api.MaxArrayTasks)
				}
				seen[i] = true
				tasks = append(tasks, i)
			}
		}
	}
	slices.Sort(tasks)
	return tasks, limit, nil
}

func arrayIndex(spec, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || !allDigitsASCII(s) || n > maxArrayIndex {
		return 0, fmt.Errorf("%q: %q is not a task index: use whole numbers from 0 to %d", spec, s, maxArrayIndex)
	}
	return n, nil
}

func allDigitsASCII(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// formatTasks writes task indexes (increasing) as Slurm does: "1-3,7,9".
func formatTasks(tasks []int) string {
	var b strings.Builder
	for i := 0; i < len(tasks); {
		j := i
		for j+1 < len(tasks) && tasks[j+1] == tasks[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(tasks[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(tasks[j]))
		}
		i = j + 1
	}
	return b.String()
}

// parseJobTarget reads a job, or a task of a job array: "12", or "12_7"
// for task 7 of array 12.
func parseJobTarget(s string) (api.JobID, *int, error) {
	id, task, isTask := strings.Cut(s, "_")
	jid, err := parseJobID(id)
	if err != nil {
		return 0, nil, err
	}
	if !isTask {
		return jid, nil, nil
	}
	n, err := arrayIndex(s, task)
	if err != nil {
		return 0, nil, fmt.Errorf("%q is not a job ID nor an array task (ARRAY_TASK, as in 12_7)", s)
	}
	return jid, &n, nil
}

// jobRow is one line of the jobs table: a job, or the pending tasks of a
// job array folded into one line.
type jobRow struct {
	label string   // "12", "12_7", "12_[8-1000%50]"
	job   *api.Job // a job of the page: not copied, a job is 456 bytes
}

// jobRows makes the lines of the jobs table: each job on a line of its
// own, labelled ARRAY_TASK when an array task, except that, unless
// expand, the pending tasks of an array share one line
// (ARRAY_[TASKS%LIMIT]) where the first of them stands.
func jobRows(jobs []*api.Job, expand bool) []jobRow {
	rows := make([]jobRow, 0, len(jobs))
	folded := map[api.JobID]int{} // array → its pending row
	var tasks [][]int             // per row, the pending tasks folded into it
	for _, j := range jobs {
		if j.ArrayJob == 0 {
			rows = append(rows, jobRow{label: j.ID.String(), job: j})
			tasks = append(tasks, nil)
			continue
		}
		if expand || j.State != api.JobPending {
			rows = append(rows, jobRow{label: fmt.Sprintf("%d_%d", j.ArrayJob, j.ArrayTask), job: j})
			tasks = append(tasks, nil)
			continue
		}
		if i, ok := folded[j.ArrayJob]; ok {
			tasks[i] = append(tasks[i], j.ArrayTask)
			continue
		}
		folded[j.ArrayJob] = len(rows)
		rows = append(rows, jobRow{job: j})
		tasks = append(tasks, []int{j.ArrayTask})
	}
	for i, ts := range tasks {
		if ts == nil {
			continue
		}
		j := rows[i].job
		if len(ts) == 1 {
			rows[i].label = fmt.Sprintf("%d_%d", j.ArrayJob, ts[0])
			continue
		}
		slices.Sort(ts)
		lim := ""
		if j.ArrayLimit > 0 {
			lim = "%" + strconv.Itoa(j.ArrayLimit)
		}
		rows[i].label = fmt.Sprintf("%d_[%s%s]", j.ArrayJob, formatTasks(ts), lim)
	}
	return rows
}
