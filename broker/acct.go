package broker

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/strata-hpc/strata/api"
	"github.com/strata-hpc/strata/broker/store"
	"github.com/strata-hpc/strata/instance"
	"github.com/strata-hpc/strata/internal/hostlist"
)

// acctScan bounds the archive records one acct request reads: a page
// with a selective filter over a long archive comes back short (even
// empty) with a cursor, rather than holding the request for seconds.
const acctScan = 20_000

// acctFilter is an acct request, checked and resolved.
type acctFilter struct {
	user         string // "": every user
	states       map[api.JobState]bool
	since, until instance.Time // until 0: open
	resv         string
	resvPath     string
	scope        string // instance path: it and below
}

func (f *acctFilter) keep(j *instance.Job) bool {
	switch {
	case !j.State.Final():
		return false
	case f.user != "" && j.Spec.User != f.user:
		return false
	case len(f.states) > 0 && !f.states[api.JobState(j.State.String())]:
		return false
	case j.End < f.since || (f.until != 0 && j.End >= f.until):
		return false
	case !under(j.Path, f.scope):
		return false
	case f.resv != "" && j.Spec.Resv != f.resv && !under(j.Path, f.resvPath):
		return false
	}
	return true
}

// under reports whether path is scope or an instance below it.
func under(path, scope string) bool {
	return path == scope || strings.HasPrefix(path, scope+".")
}

// acct serves api.OpAcct: the archive first, in the order jobs were
// archived, then the ended jobs still live, by ID. The cursor is "a" and
// the archive's stream sequence read last, or "l" and the last live job
// ID listed.
func (r *Runtime) acct(ctx context.Context, q Request) (any, error) {
	var ar api.AcctRequest
	if err := q.Decode(&ar); err != nil {
		return nil, err
	}
	if err := ar.Validate(); err != nil {
		return nil, err
	}
	f := &acctFilter{user: q.User, scope: q.Path, resv: ar.Resv}
	switch {
	case ar.User == "*":
		f.user = ""
	case ar.User != "":
		f.user = ar.User
	}
	if f.user != q.User && !q.Admin {
		return nil, api.Errorf(api.CodePermissionDenied, "only admins see other users' accounting; drop -u to see yours")
	}
	if ar.Instance != "" {
		if !under(ar.Instance, q.Path) {
			return nil, api.Errorf(api.CodeInvalidArgument, "instance %s is not %s or below it", ar.Instance, q.Path)
		}
		f.scope = ar.Instance
	}
	if len(ar.State) > 0 {
		f.states = map[api.JobState]bool{}
		for _, s := range ar.State {
			f.states[s] = true
		}
	}
	if !ar.Since.IsZero() {
		f.since = instance.Time(ar.Since.Unix())
	}
	if !ar.Until.IsZero() {
		f.until = instance.Time(ar.Until.Unix())
	}
	// The reservation: live, or archived once it has left.
	var rvRep *api.Resv
	rvArchived := false
	if f.resv != "" {
		r.lock()
		f.resvPath = r.in.Path() + "." + f.resv
		rv, ok := r.in.Resv(f.resv)
		if ok {
			a := r.apiResv(rv)
			rvRep = &a
		}
		r.mu.Unlock()
		if !ok {
			var err error
			if rv, ok, err = r.archivedResv(ctx, f.resv); err != nil {
				return nil, err
			}
			if ok {
				r.lock()
				a := r.apiResv(rv)
				r.mu.Unlock()
				rvRep, rvArchived = &a, true
			}
		}
		if ok {
			f.resvPath = rv.Path
		}
	}

	phase, pos, err := parseAcctCursor(ar.Cursor)
	if err != nil {
		return nil, err
	}
	out := api.AcctReply{Jobs: []api.AcctJob{}}
	if ar.Cursor == "" {
		out.Resv, out.ResvArchived = rvRep, rvArchived
	}
	var seqs []uint64 // the archive sequence of each archived job of out
	if phase == 'a' {
		var next uint64
		var done bool
		var err error
		seqs, next, done, err = r.acctArchive(ctx, f, ar.Since, pos, ar.Size(), &out)
		if err != nil {
			return nil, err
		}
		switch {
		case !done:
			out.Next = "a" + strconv.FormatUint(next, 10)
		case len(out.Jobs) == ar.Size():
			out.Next = "l0" // the archive filled the page: the live jobs come next
		}
		pos = 0
	}
	if out.Next == "" {
		r.lock()
		jobs, more := r.in.TreeJobsAfter(instance.JobID(pos), ar.Size()-len(out.Jobs), f.keep)
		metas := make([]*jobMeta, len(jobs)) // copies: an exit sets CPU and MaxRSS in place
		for i, j := range jobs {
			if m := r.meta[j.ID]; m != nil {
				c := *m
				metas[i] = &c
			}
		}
		r.mu.Unlock()
		for i, j := range jobs {
			out.Jobs = append(out.Jobs, acctJob(j, metas[i], false))
		}
		if more {
			out.Next = "l" + out.Jobs[len(out.Jobs)-1].ID.String()
		}
	}
	// Each job is encoded once, to fit the page and for the reply.
	n, enc, err := fitEncoded(out.Jobs)
	if err != nil {
		return nil, err
	}
	if n < len(out.Jobs) {
		if n <= len(seqs) { // cut inside the archive's part
			out.Next = "a" + strconv.FormatUint(seqs[n-1], 10)
		} else {
			out.Next = "l" + out.Jobs[n-1].ID.String()
		}
	}
	return acctEncoded(enc, out)
}

// acctEncoded is the JSON of out, as json.Marshal writes it, with the jobs
// as fitEncoded encoded them (out.Jobs is not read).
func acctEncoded(jobs [][]byte, out api.AcctReply) (api.Encoded, error) {
	var extra [][]byte
	if out.Resv != nil {
		f, err := jsonField("resv", out.Resv)
		if err != nil {
			return nil, err
		}
		extra = append(extra, f)
	}
	if out.ResvArchived {
		extra = append(extra, []byte(`"resv_archived":true`))
	}
	return encodedList("jobs", jobs, out.Next, extra...), nil
}

// parseAcctCursor reads acct's cursor: phase 'a' (the archive) and the
// stream sequence read last, or 'l' (the live jobs) and the last job ID
// listed. "" is the start of the archive.
func parseAcctCursor(c string) (phase byte, pos uint64, err error) {
	if c == "" {
		return 'a', 0, nil
	}
	n, err := strconv.ParseUint(c[1:], 10, 64)
	if err != nil || (c[0] != 'a' && c[0] != 'l') {
		return 0, 0, badCursor(c)
	}
	return c[0], n, nil
}

// acctArchive appends to out the archived jobs f keeps, reading the
// archive after stream sequence after (0: from since, or the beginning),
// until out holds limit jobs, acctScan records were read, or the archive
// ends (done). seqs are the sequences of the jobs appended; next is the
// sequence read last.
func (r *Runtime) acctArchive(ctx context.Context, f *acctFilter, since time.Time, after uint64, limit int, out *api.AcctReply) (seqs []uint64, next uint64, done bool, err error) {
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{store.ArchiveJobsSubject}, DeliverPolicy: jetstream.DeliverAllPolicy}
	switch {
	case after > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, after+1
	case !since.IsZero():
		// A job is archived after it ends: what ended since then was
		// archived since then.
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &since
	}
	next, done = after, true
	read := 0
	err = r.scanArchiveWith(ctx, cfg, func(msg jetstream.Msg) (bool, error) {
		md, err := msg.Metadata()
		if err != nil {
			return false, err
		}
		next = md.Sequence.Stream
		read++
		j, m, err := store.DecodeArchivedJob(msg.Subject(), msg.Data())
		if err != nil {
			return false, err
		}
		if f.keep(&j) {
			out.Jobs = append(out.Jobs, acctJob(j, &m, true))
			seqs = append(seqs, next)
		}
		if md.NumPending > 0 && (len(out.Jobs) == limit || read == acctScan) {
			done = false
			return false, nil
		}
		return true, nil
	})
	return seqs, next, done, err
}

// acctJob is the accounting record of ended job j, with what its
// processes used from its meta m (nil: unknown).
func acctJob(j instance.Job, m *jobMeta, archived bool) api.AcctJob {
	a := api.AcctJob{
		ID: api.JobID(j.ID), User: j.Spec.User, Name: j.Spec.Name, State: api.JobState(j.State.String()), Reason: j.Reason,
		Instance: j.Path, Resv: j.Spec.Resv, NNodes: j.Spec.Nodes, QPU: j.Spec.Slots,
		SubmitTime: unix(j.Submit), StartTime: unix(j.Start), EndTime: unix(j.End), Archived: archived,
	}
	if len(j.Nodes) > 0 {
		a.Nodes, a.NNodes = hostlist.Format(j.Nodes), len(j.Nodes)
	}
	if j.Start != 0 {
		code := j.ExitCode
		a.ExitCode = &code
		if j.End > j.Start {
			a.ElapsedS = int64(j.End - j.Start)
		}
	}
	hours := float64(a.ElapsedS) / 3600
	if j.Start != 0 {
		a.NodeHours = float64(a.NNodes) * hours
	}
	slots := 0
	for _, n := range j.Spec.Slots {
		slots += n
	}
	a.QPUSlotHours = float64(slots) * hours
	if m != nil {
		a.CPUTime, a.MaxRSS = float64(m.CPU)/1e6, m.MaxRSS
	}
	return a
}
