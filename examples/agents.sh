#!/bin/sh
# The multi-host shape on one machine: a broker that runs no job itself
# and four node agents, one per node, as separate processes. Run from the
# repository root; it stops the broker and the agents when it is done.
set -eu
dir=$(mktemp -d /tmp/strata-agents.XXXXXX)
go build -tags urfave_cli_no_docs -o "$dir" ./cmd/strata ./cmd/strata-broker
cd "$dir"
# The jobs here are the admin's, who has no Unix account: run them as
# whoever runs this script (as root, that takes --allow-root-jobs too). A
# real install leaves both out, so that each job runs as its user's account.
self="--run-as-self"
agentself=
if [ "$(id -u)" = 0 ]; then self="$self --allow-root-jobs"; agentself=--allow-root-jobs; fi
pids=
trap 'kill $pids 2>/dev/null; wait' EXIT INT TERM
./strata broker start --listen 127.0.0.1:0 --state-dir "$dir/state" --nodes 'node[0-3]' \
    --no-local-agent --node-timeout 10s $self >broker.out 2>broker.log &
pids=$!
until grep -q 'strata://' broker.out 2>/dev/null; do sleep 0.1; done
STRATA_URI=$(grep -o 'strata://[^ ]*' broker.out)
STRATA_CREDS=$dir/state/admin.creds
export STRATA_URI STRATA_CREDS
for i in 0 1 2 3; do
    ./strata user add agent$i --agent --nodes node$i -o agent$i.creds
    ./strata agent --node node$i --creds agent$i.creds --state-dir "$dir/agent$i" $agentself 2>agent$i.log &
    pids="$! $pids"
done
until [ "$(grep -c 'agent registered' broker.log)" -ge 4 ]; do sleep 0.1; done
./strata run -N 4 -- sh -c 'echo "the script runs on $STRATA_NODENAME of $STRATA_NODELIST"'
# A step inside the allocation: one task per node, each on its agent.
cat > step.sh <<'SH'
#!/bin/sh
./strata exec -l -- sh -c 'echo "task $STRATA_TASK_ID of $STRATA_NTASKS on $STRATA_NODENAME"'
SH
chmod +x step.sh
./strata run -N 4 -- ./step.sh
ids=
for i in 0 1 2 3; do ids="$ids $(./strata submit -t 1m -- sh -c 'echo $STRATA_NODENAME; sleep 1')"; done
for id in $ids; do ./strata wait "$id" >/dev/null; echo "job $id ran on $(cat strata-$id.out)"; done
./strata jobs -a
echo "logs in $dir"
