#!/bin/bash
# side-by-side.sh — Strata and the Slurm peer on the same machine, in one run,
# the same operations interleaved round by round, so that the ratios hold on a
# noisy host. It extends ../shared/peers/side-by-side.sh with every everyday
# command of issue 16: job show, cancel, wait, resv list/show, uri, resource
# list, qpu submit and qpu result, each next to its nearest Slurm counterpart.
#
# Needs the Slurm peer running (../shared/peers/slurm/setup.sh) and built
# programs, strata and strata-broker in one directory:
#
#	CGO_ENABLED=0 go build -tags urfave_cli_no_docs -o /tmp/s/strata ./cmd/strata &&
#	  go build -tags urfave_cli_no_docs -o /tmp/s/strata-broker ./cmd/strata-broker
#	STRATA=/tmp/s/strata bench/side-by-side.sh
#
# Prints one line per figure: name slurm=median strata=median
# ratio_slurm_over_strata (above 1 for a time: Strata faster; for a rate,
# the reverse). Knobs: N_JOBS, ROUNDS, SAMPLES.
#
# BEFORE=path/to/another/strata times a second front end too, against the
# same broker, each of its samples right after STRATA's: a before/after
# comparison in one run. Each line then adds before=median and
# ratio_slurm_over_before.
#
# Counterparts where Slurm has no such command: uri (resolve a reservation
# to its instance) against 'scontrol show reservation NAME'; wait on an
# ended job against 'scontrol show job ID'; qpu submit against 'sbatch -H';
# qpu result against 'scontrol show job ID'.
set -uo pipefail
: "${STRATA:?set STRATA to a built strata binary (strata-broker next to it)}"
BROKER=${STRATA_BROKER:-$(dirname "$STRATA")/strata-broker}
N=${N_JOBS:-300}      # jobs per serial-submit round
R=${ROUNDS:-3}        # rounds
K=${SAMPLES:-15}      # latency samples per round
B=${BEFORE:-}         # a second front end to time alongside, or empty
source "${SLURM_PEER_DIR:-/tmp/slurm-peer}/env.sh"
W=$(mktemp -d /tmp/sbs.XXXXXX)
cleanup() {
  [ -n "${SESSION:-}" ] && "$STRATA" cancel "$SESSION" >/dev/null 2>&1
  [ -n "${BPID:-}" ] && { kill "$BPID"; wait "$BPID"; } 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
# The jobs are the admin's, who has no Unix account: they run as whoever runs
# this script (--run-as-self; as root, --allow-root-jobs too), as Slurm's do.
self=(--run-as-self); [ "$(id -u)" = 0 ] && self+=(--allow-root-jobs)
"$BROKER" broker start --listen 127.0.0.1:$port --state-dir "$W/state" --nodes 'n[1-8]' --qpu qpu0:8 --qpu-sim "${self[@]}" >"$W/broker.log" 2>&1 &
BPID=$!
export STRATA_URI=strata://127.0.0.1:$port/root
for i in $(seq 100); do [ -f "$W/state/admin.creds" ] && STRATA_CREDS=$W/state/admin.creds "$STRATA" resource list >/dev/null 2>&1 && break; sleep 0.1; done
export STRATA_CREDS=$W/state/admin.creds
cd "$W"
ms() { echo $(( ($2 - $1) / 1000 )).$(( (($2 - $1) % 1000) / 100 )); }
now() { echo ${EPOCHREALTIME/./}; }
med() { sort -g | awk '{a[NR]=$1} END{print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
declare -A S
add() { S[$1]+="$2 "; }
# time NAME CMD...: one sample of CMD's whole run, in ms, added to NAME
time1() { local n=$1 a b; shift; a=$(now); "$@" >/dev/null 2>&1; b=$(now); add "$n" "$(ms $a $b)"; }
# st NAME ARGS...: one sample of strata ARGS as strata_NAME and, with
# BEFORE, one of the other front end as before_NAME.
st() { local n=$1; shift; time1 "strata_$n" "$STRATA" "$@"; [ -n "$B" ] && time1 "before_$n" "$B" "$@"; }
# submit_rate NAME BIN COUNT: COUNT serial held submissions with BIN, per second
submit_rate() {
  local t0 t1 i; t0=$(now); for ((i = 0; i < $3; i++)); do "$2" submit --hold -t 1m -- sleep 1 >/dev/null; done; t1=$(now)
  add "$1" "$(awk -v n=$3 -v a=$t0 -v b=$t1 'BEGIN{printf "%.1f", n/((b-a)/1e6)}')"
}

# Fixtures: an ended job on each side (job show, wait), a job holding a
# QPU slot that qpu submit runs under, and a QPU job with its result.
sj=$(sbatch --parsable --wrap true); sleep 2
tj=$("$STRATA" submit -t 1m -- true); "$STRATA" wait "$tj" >/dev/null
SESSION=$("$STRATA" submit -N 1 -t 1h --qpu qpu0:1 -- sleep 3600)
for i in $(seq 100); do "$STRATA" job show "$SESSION" 2>/dev/null | grep -q -i running && break; sleep 0.1; done
printf 'h q0\ncx q0 q1\nmeasure\n' >"$W/circuit"
qj=$(STRATA_JOBID=$SESSION "$STRATA" qpu submit --backend qpu0 --shots 10 "$W/circuit")
"$STRATA" qpu result --wait "$qj" >/dev/null || { echo "qpu result $qj failed" >&2; exit 1; }
scontrol create reservation ReservationName=sbsshow StartTime=now+100days Duration=60 NodeCnt=1 Users=root >/dev/null
"$STRATA" resv create --name sbsshow --start +2400h --duration 1h --nodes 1 --users admin >/dev/null
trap 'scontrol delete reservation=sbsshow >/dev/null 2>&1; cleanup' EXIT

for r in $(seq "$R"); do
  # serial submissions of held jobs, one process per submission, as scripts do
  scancel -u root 2>/dev/null; sleep 1
  t0=$(now); for ((i = 0; i < N; i++)); do sbatch -H --wrap 'sleep 1' >/dev/null; done; t1=$(now)
  add slurm_submit_per_s "$(awk -v n=$N -v a=$t0 -v b=$t1 'BEGIN{printf "%.1f", n/((b-a)/1e6)}')"
  # (with BEFORE, each front end submits half, so that N jobs are pending)
  if [ -z "$B" ]; then submit_rate strata_submit_per_s "$STRATA" "$N"
  else submit_rate strata_submit_per_s "$STRATA" $((N / 2)); submit_rate before_submit_per_s "$B" $((N - N / 2)); fi
  # listing the queue with those jobs pending, and the everyday read-only commands
  for k in $(seq "$K"); do
    time1 slurm_list_ms squeue;                      st list_ms jobs
    time1 slurm_job_show_ms scontrol show job "$sj"; st job_show_ms job show "$tj"
    time1 slurm_wait_ms scontrol show job "$sj";     st wait_ms wait "$tj"
    time1 slurm_resource_list_ms sinfo;              st resource_list_ms resource list
    time1 slurm_resv_list_ms scontrol show reservation; st resv_list_ms resv list
    time1 slurm_resv_show_ms scontrol show reservation=sbsshow; st resv_show_ms resv show sbsshow
    time1 slurm_uri_ms scontrol show reservation=sbsshow; st uri_ms uri sbsshow
    time1 slurm_qpu_result_ms scontrol show job "$sj"; st qpu_result_ms qpu result "$qj"
    time1 slurm_qpu_submit_ms sbatch -H --wrap true
    export STRATA_JOBID=$SESSION; st qpu_submit_ms qpu submit --backend qpu0 --shots 10 "$W/circuit"; unset STRATA_JOBID
  done
  # cancel, one held job at a time
  sids=($(squeue -h -t PD -o %i | head -n "$K")); tids=($("$STRATA" jobs --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(str(j["id"]) for j in (d if isinstance(d,list) else d.get("jobs",[])) if j.get("state")=="pending"))' | tr ' ' '\n' | head -n "$K"))
  # (with BEFORE, the held jobs are shared out: strata cancels the even ones)
  for ((k = 0; k < ${#sids[@]} && k < ${#tids[@]}; k++)); do
    time1 slurm_cancel_ms scancel "${sids[k]}"
    if [ -z "$B" ]; then time1 strata_cancel_ms "$STRATA" cancel "${tids[k]}"; continue; fi
    (( k % 2 == 0 )) && time1 strata_cancel_ms "$STRATA" cancel "${tids[k]}" || time1 before_cancel_ms "$B" cancel "${tids[k]}"
  done
  scancel -u root 2>/dev/null
  "$STRATA" jobs --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(" ".join(str(j["id"]) for j in (d if isinstance(d,list) else d.get("jobs",[])) if j.get("state")=="pending"))' | xargs -r "$STRATA" cancel >/dev/null 2>&1
  # reservation create + delete
  for k in $(seq "$K"); do
    a=$(now); scontrol create reservation ReservationName=sbs$k StartTime=now+1hour Duration=60 NodeCnt=1 Users=root >/dev/null; b=$(now)
    add slurm_resv_create_ms "$(ms $a $b)"
    a=$(now); scontrol delete reservation=sbs$k >/dev/null; b=$(now); add slurm_resv_delete_ms "$(ms $a $b)"
    a=$(now); "$STRATA" resv create --name sbs$k --start +1h --duration 1h --nodes 1 --users admin >/dev/null; b=$(now)
    add strata_resv_create_ms "$(ms $a $b)"
    a=$(now); "$STRATA" resv delete sbs$k >/dev/null; b=$(now); add strata_resv_delete_ms "$(ms $a $b)"
    if [ -n "$B" ]; then
      a=$(now); "$B" resv create --name sbsb$k --start +1h --duration 1h --nodes 1 --users admin >/dev/null; b=$(now)
      add before_resv_create_ms "$(ms $a $b)"
      a=$(now); "$B" resv delete sbsb$k >/dev/null; b=$(now); add before_resv_delete_ms "$(ms $a $b)"
    fi
  done
  # run a trivial job and wait for it, output streamed back
  for k in $(seq "$K"); do
    a=$(now); srun -N1 true >/dev/null 2>&1; b=$(now); add slurm_run_true_ms "$(ms $a $b)"
    a=$(now); "$STRATA" run -t 1m -- true >/dev/null 2>&1; b=$(now); add strata_run_true_ms "$(ms $a $b)"
    [ -n "$B" ] && { a=$(now); "$B" run -t 1m -- true >/dev/null 2>&1; b=$(now); add before_run_true_ms "$(ms $a $b)"; }
  done
done
echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
for f in submit_per_s list_ms job_show_ms cancel_ms wait_ms resv_create_ms resv_list_ms resv_show_ms resv_delete_ms uri_ms resource_list_ms qpu_submit_ms qpu_result_ms run_true_ms; do
  s=$(echo ${S[slurm_$f]:-} | tr ' ' '\n' | med); t=$(echo ${S[strata_$f]:-} | tr ' ' '\n' | med)
  line="$f slurm=$s strata=$t ratio_slurm_over_strata=$(awk -v s=$s -v t=$t 'BEGIN{if (t > 0) printf "%.2f", s/t; else print "n/a"}')"
  if [ -n "$B" ]; then
    o=$(echo ${S[before_$f]:-} | tr ' ' '\n' | med)
    line+=" before=$o ratio_slurm_over_before=$(awk -v s=$s -v t=$o 'BEGIN{if (t > 0) printf "%.2f", s/t; else print "n/a"}')"
  fi
  echo "$line"
done
