#!/bin/sh
# A DAT day for a class: copy it, set the variables, run it as staff.
#
#   1. Staff reserve CLASS_NODES nodes for the class from START for DURATION
#      (a DAT: dedicated access time), for the listed students only, killing
#      whatever still runs on those nodes at the start (--overlap kill; the
#      killed jobs are requeued if they asked for it).
#   2. Each student queues work into the DAT by its URI before it starts
#      (STRATA_URI=$(strata uri CLASS) strata submit ...); it waits for the
#      window, then runs inside the DAT's own instance.
#   3. After the class, staff read what the DAT was used for:
#      strata acct --resv CLASS.
#
# Staff run it with admin credentials (STRATA_CREDS, STRATA_URI as usual).
# The students' part is done here with their credentials files, one per
# student in STUDENT_CREDS_DIR (NAME.creds, from 'strata user add NAME'), so
# that the whole day can be rehearsed by one person; in a real class each
# student runs the two lines of step 2 themselves.
#
# DEMO_OTHER, if set, names a user (credentials in STUDENT_CREDS_DIR too)
# whose long job is started on the class's nodes first, to show what
# happens to work in the DAT's way. Leave it unset on a real machine.
set -eu

CLASS=${CLASS:-physics101}                 # the DAT's name
START=${START:-now+10minutes}              # when the class starts: any time 'resv create --start' reads
DURATION=${DURATION:-2h}                   # how long it lasts
CLASS_NODES=${CLASS_NODES:-2}              # how many nodes it reserves
STUDENTS=${STUDENTS:-"stud1 stud2"}        # who may use it, separated by blanks
STUDENT_CREDS_DIR=${STUDENT_CREDS_DIR:-.}  # where NAME.creds of each student is
GRACE=${GRACE:-30s}                        # SIGTERM to SIGKILL for jobs in its way
STRATA=${STRATA:-strata}                   # the strata command
DEMO_OTHER=${DEMO_OTHER:-}                 # demo only: a user whose job is in the way

say() { printf '== %s\n' "$*"; }
as_user() { # as_user NAME strata-args...: run strata as a student
	u=$1
	shift
	STRATA_CREDS="$STUDENT_CREDS_DIR/$u.creds" "$STRATA" "$@"
}

users=$(echo $STUDENTS | tr ' ' ',')

if [ -n "$DEMO_OTHER" ]; then
	say "demo: $DEMO_OTHER runs a long job on every node"
	other_job=$(as_user "$DEMO_OTHER" submit -N "$CLASS_NODES" -t 1h --name long-run -- sleep 3600)
	until [ "$(as_user "$DEMO_OTHER" job show "$other_job" --json | sed -n 's/^  "state": *"\([a-z]*\)".*/\1/p')" = running ]; do
		sleep 0.2
	done
	echo "job $other_job of $DEMO_OTHER is running"
fi

say "staff: what the DAT would cost (dry run)"
"$STRATA" resv create --name "$CLASS" --start "$START" --duration "$DURATION" \
	--nodes "$CLASS_NODES" --users "$users" --overlap kill --grace "$GRACE" --dry-run

say "staff: create the DAT $CLASS for $users"
"$STRATA" resv create --name "$CLASS" --start "$START" --duration "$DURATION" \
	--nodes "$CLASS_NODES" --users "$users" --overlap kill --grace "$GRACE"
uri=$("$STRATA" uri "$CLASS")
echo "students submit into $uri"

say "students: queue work into the DAT before it starts"
jobs=""
for s in $STUDENTS; do
	id=$(STRATA_URI="$uri" as_user "$s" submit -N 1 -t 5m --name "$s-lab" -o "$s-lab-%j.out" -- \
		sh -c "echo \"$s: job \$STRATA_JOBID ran on \$STRATA_NODELIST in \$STRATA_URI\"")
	echo "$s queued job $id: $(STRATA_URI="$uri" as_user "$s" job show "$id" --json | sed -n 's/^  "reason": *"\(.*\)",$/\1/p')"
	jobs="$jobs $id"
done

say "the class: wait for the students' jobs"
for id in $jobs; do
	"$STRATA" wait "$id"
	"$STRATA" job show "$id" | sed -n 's/^\(state\|nodes\|resv\|reason\): */  job '"$id"' \1: /p'
done
if [ -n "$DEMO_OTHER" ]; then
	say "demo: what happened to $DEMO_OTHER's job"
	"$STRATA" job show "$other_job" | sed -n 's/^\(state\|reason\): */  job '"$other_job"' \1: /p'
fi

say "staff: what the DAT was used for"
"$STRATA" acct --resv "$CLASS" -u '*'
