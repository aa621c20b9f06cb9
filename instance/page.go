package instance

// JobsAfter returns in's jobs (and those queued in its reservations) with an ID above after that keep accepts (nil
// keeps all), in ID order, at most limit of them (limit > 0), and whether
// more follow. It costs O(log n) to find the first job plus one step per
// job of the tree it looks at, so a page of a long list costs about the
// page, not the list, when keep accepts most jobs.
func (in *Instance) JobsAfter(after JobID, limit int, keep func(*Job) bool) (jobs []Job, more bool) {
	return in.jobsAfter(after, limit, keep, (*Job).copy)
}

// BriefJobsAfter is JobsAfter with the records a table of jobs shows:
// without their history, node list, exclusion, dependencies and QPU
// slots (see api.Job.Brief), which cost most of a copy.
func (in *Instance) BriefJobsAfter(after JobID, limit int, keep func(*Job) bool) (jobs []Job, more bool) {
	return in.jobsAfter(after, limit, keep, (*Job).brief)
}

func (in *Instance) jobsAfter(after JobID, limit int, keep func(*Job) bool, cp func(*Job) Job) (jobs []Job, more bool) {
	if limit <= 0 {
		return nil, false
	}
	in.sh.ids.AscendGreaterOrEqual(after+1, func(id JobID) bool {
		j := in.sh.jobs[id]
		if !in.lists(j) || (keep != nil && !keep(j)) {
			return true
		}
		if len(jobs) == limit {
			more = true
			return false
		}
		jobs = append(jobs, cp(j))
		return true
	})
	return jobs, more
}

// TreeJobsAfter is JobsAfter over the jobs of every instance of the tree,
// whichever instance of it is asked.
func (in *Instance) TreeJobsAfter(after JobID, limit int, keep func(*Job) bool) (jobs []Job, more bool) {
	if limit <= 0 {
		return nil, false
	}
	in.sh.ids.AscendGreaterOrEqual(after+1, func(id JobID) bool {
		j := in.sh.jobs[id]
		if keep != nil && !keep(j) {
			return true
		}
		if len(jobs) == limit {
			more = true
			return false
		}
		jobs = append(jobs, j.copy())
		return true
	})
	return jobs, more
}
