#!/usr/bin/env bash
# The whole test suite: unit, property, fuzz seed corpora, end-to-end, and a
# one-iteration smoke run of every benchmark (-short: the trace replays use
# their first 5,000 jobs). Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")"
go test -race -count=1 -timeout 15m "$@" ./...
go test -short -run '^$' -bench . -benchtime 1x -count=1 -timeout 10m "$@" ./...
