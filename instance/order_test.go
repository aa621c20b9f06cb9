package instance

import (
	"math/rand"
	"slices"
	"testing"
)

// checkOrder compares o with want, the same jobs sorted by brute force:
// length, walk, ends, the rank of every job, and the chunks' invariants.
func checkOrder(t *testing.T, o *jobOrder, want []*Job, absent []*Job) {
	t.Helper()
	if o.Len() != len(want) {
		t.Fatalf("Len %d, want %d", o.Len(), len(want))
	}
	var got []*Job
	o.Ascend(func(j *Job) bool { got = append(got, j); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("walk gives %d jobs out of order (or not the set's): want %d", len(got), len(want))
	}
	for i, j := range want {
		if r, ok := o.Rank(j); !ok || r != i {
			t.Fatalf("Rank(job %d/u%d) = %d, %v; want %d, true", j.ID, j.Spec.Urgency, r, ok, i)
		}
	}
	for _, j := range absent {
		r, ok := o.Rank(j)
		wantR, _ := slices.BinarySearchFunc(want, j, cmpJobs)
		if ok || r != wantR {
			t.Fatalf("Rank of absent job %d = %d, %v; want %d, false", j.ID, r, ok, wantR)
		}
	}
	if len(want) > 0 {
		if m, _ := o.Min(); m != want[0] {
			t.Fatalf("Min is job %d, want %d", m.ID, want[0].ID)
		}
		if m, _ := o.Max(); m != want[len(want)-1] {
			t.Fatalf("Max is job %d, want %d", m.ID, want[len(want)-1].ID)
		}
	} else if _, ok := o.Max(); ok {
		t.Fatal("Max of an empty set found a job")
	}
	for i, ch := range o.chunks {
		if len(ch) == 0 || len(ch) > maxChunk {
			t.Fatalf("chunk %d of %d has %d jobs, want 1..%d", i, len(o.chunks), len(ch), maxChunk)
		}
	}
}

// TestJobOrder drives the queue's ordered set with random insertions
// (new jobs at the end, as submissions, and anywhere, as urgency changes
// and requeues), replacements and deletions, through growth past many
// chunks and back to empty, and checks it against a sorted slice after
// every batch.
func TestJobOrder(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		rng := rand.New(rand.NewSource(seed))
		var o jobOrder
		var want []*Job
		byID := map[JobID]*Job{}
		next := JobID(1)
		maxChunks := 0
		for round := range 60 {
			grow := round < 30 || round%7 == 0
			for range 300 {
				switch k := rng.Intn(10); {
				case k < 8 && grow || k < 2:
					j := &Job{ID: next, Spec: Spec{Urgency: DefaultUrgency}}
					if k%2 == 1 {
						j.Spec.Urgency = 1 + rng.Intn(31) // anywhere in the queue
					}
					next++
					if _, had := o.ReplaceOrInsert(j); had {
						t.Fatalf("job %d: inserted as new, but found", j.ID)
					}
					i, _ := slices.BinarySearchFunc(want, j, cmpJobs)
					want = slices.Insert(want, i, j)
					byID[j.ID] = j
				case k < 6 && len(want) > 0:
					// The same job again (ReplaceOrInsert of what is there).
					j := want[rng.Intn(len(want))]
					if old, had := o.ReplaceOrInsert(j); !had || old != j {
						t.Fatalf("job %d: re-inserted, but not found", j.ID)
					}
				case len(want) > 0:
					i := rng.Intn(len(want))
					if rng.Intn(3) == 0 {
						i = 0 // the head: jobs start from the front
					}
					j := want[i]
					if old, had := o.Delete(j); !had || old != j {
						t.Fatalf("job %d: Delete did not find it", j.ID)
					}
					if _, had := o.Delete(j); had {
						t.Fatalf("job %d: deleted twice", j.ID)
					}
					want = slices.Delete(want, i, i+1)
					delete(byID, j.ID)
				}
			}
			absent := []*Job{{ID: next + 5, Spec: Spec{Urgency: 1}}, {ID: 0, Spec: Spec{Urgency: 31}}, {ID: next / 2, Spec: Spec{Urgency: 16}}}
			if byID[next/2] != nil {
				absent = absent[:2]
			}
			checkOrder(t, &o, want, absent)
			maxChunks = max(maxChunks, len(o.chunks))
		}
		if maxChunks < 8 {
			t.Fatalf("seed %d: at most %d chunks: the test did not reach splits and joins", seed, maxChunks)
		}
		t.Logf("seed %d: up to %d chunks", seed, maxChunks)
		for len(want) > 0 {
			i := rng.Intn(len(want))
			o.Delete(want[i])
			want = slices.Delete(want, i, i+1)
		}
		checkOrder(t, &o, want, nil)
		if len(o.chunks) != 0 {
			t.Fatalf("seed %d: empty set keeps %d chunks", seed, len(o.chunks))
		}
	}
}

func cmpJobs(a, b *Job) int {
	switch {
	case jobLess(a, b):
		return -1
	case jobLess(b, a):
		return 1
	}
	return 0
}

// TestPlacesExact: the place of every pending job (its position in the
// queue and the planned jobs ahead of it), as the records give it, is
// what a walk of the queue finds, at every instant of a random workload
// of submissions, cancellations, urgency changes (nice), holds and
// releases, starts and ends, under every policy.
func TestPlacesExact(t *testing.T) {
	for _, pol := range []Policy{FCFS, EASY, Hybrid(3), Conservative} {
		t.Run(pol.Name, func(t *testing.T) {
			rng := rand.New(rand.NewSource(7))
			in, err := New(Config{Nodes: names("n", 8), Policy: pol})
			if err != nil {
				t.Fatal(err)
			}
			who := Actor{User: "alice"}
			var ids []JobID
			positions, planned := 0, 0
			for now := Time(1); now <= 400; now++ {
				for range rng.Intn(6) {
					spec := Spec{Nodes: 1 + rng.Intn(4), Walltime: Duration(5 + rng.Intn(60)), Hold: rng.Intn(4) == 0}
					if rng.Intn(3) == 0 {
						spec.Urgency = 1 + rng.Intn(31)
					}
					id, err := in.Submit(now, who, "root", spec)
					if err != nil {
						t.Fatal(err)
					}
					ids = append(ids, id)
				}
				for range rng.Intn(4) {
					if len(ids) == 0 {
						break
					}
					id := ids[rng.Intn(len(ids))]
					j, _ := in.Job(id)
					var err error
					switch k := rng.Intn(5); {
					case j.State != Pending && j.State != Running:
						continue
					case k == 0:
						err = in.Cancel(now, who, id)
					case k == 1 && j.State == Pending:
						err = in.Update(now, who, id, Update{Urgency: 1 + rng.Intn(31)})
					case k == 2 && j.State == Pending:
						h := !j.Spec.Hold
						err = in.Update(now, who, id, Update{Hold: &h})
					case j.State == Running:
						err = in.Exited(now, id, Exit{})
					}
					if err != nil {
						t.Fatalf("at %d, job %d: %v", now, id, err)
					}
				}
				in.Tick(now)
				in.Ready()
				n, p := checkPlaces(t, in)
				positions += n
				planned += p
			}
			if positions < 1000 || planned == 0 {
				t.Fatalf("%d positions checked, %d of them with planned jobs ahead: the workload is too light", positions, planned)
			}
			t.Logf("%d positions checked, %d with planned jobs ahead", positions, planned)
		})
	}
}

// checkPlaces compares every pending job's place with a brute-force walk
// of the instance's pending jobs sorted in queue order, and the set of
// plans with the jobs marked planned. It returns the number of places
// checked and how many had planned jobs ahead.
func checkPlaces(t *testing.T, in *Instance) (n, withAhead int) {
	t.Helper()
	var pending []*Job
	for _, j := range in.sh.jobs {
		if j.State == Pending && j.inst == in {
			pending = append(pending, j)
		}
	}
	slices.SortFunc(pending, cmpJobs)
	var ahead, plans []JobID
	for i, j := range pending {
		want := place{pos: i + 1, ahead: ahead}
		got := in.placeOf(j)
		if got.pos != want.pos || !slices.Equal(got.ahead, want.ahead) {
			t.Fatalf("job %d: place %d, ahead %v; a walk finds %d, ahead %v", j.ID, got.pos, got.ahead, want.pos, want.ahead)
		}
		if rec, _ := in.Job(j.ID); rec.Wait == nil || rec.Wait.Position != i+1 {
			t.Fatalf("job %d: record's Wait %+v, want position %d", j.ID, rec.Wait, i+1)
		}
		if j.planned {
			plans = append(plans, j.ID)
			if len(ahead) < maxWaitJobs {
				ahead = append(slices.Clip(ahead), j.ID)
			}
		}
		if len(want.ahead) > 0 {
			withAhead++
		}
	}
	var got []JobID
	in.plans.Ascend(func(j *Job) bool { got = append(got, j.ID); return true })
	if !slices.Equal(got, plans) || in.nplan != len(plans) {
		t.Fatalf("plans %v (nplan %d), want the planned jobs %v", got, in.nplan, plans)
	}
	return len(pending), withAhead
}
