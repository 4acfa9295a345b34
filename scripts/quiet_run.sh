#!/usr/bin/env bash
# Run one timed command on cores nothing else uses: take /tmp/timing.lock (one timed run at a time) and pause every
# process running at nice >= 5 (other sessions' accuracy runs and training, which start niced by convention) with
# SIGSTOP for the length of the command, resuming them with SIGCONT afterwards (also on failure or Ctrl-C).
# Processes niced later are paused too (polled every 0.3 s). Kernel threads are left alone.
#
#   bash scripts/quiet_run.sh .venv/bin/nexus bench latency --tools T/tools.json --queries T/queries.jsonl ...
#
# Why: on the project's 2-vCPU machines a job at nice 10-19 still takes a core from a 2-thread llama.cpp decode, whose
# threads wait for each other; with one beside it two CPU-bound processes each ran 2.1-2.3x as long as alone.
set -uo pipefail
exec 9>/tmp/timing.lock
flock 9
STOPPED=$(mktemp)
pause_niced() {
  for pid in $(ps -eo pid=,ni=,args= | awk '$2 >= 5 && $3 !~ /^\[/ {print $1}'); do
    [[ $pid != "$$" ]] && kill -STOP "$pid" 2>/dev/null && echo "$pid" >>"$STOPPED"
  done
}
resume() {
  kill "$POLL" 2>/dev/null
  wait "$POLL" 2>/dev/null
  for pid in $(sort -u "$STOPPED"); do kill -CONT "$pid" 2>/dev/null; done
  rm -f "$STOPPED"
}
pause_niced
(while true; do sleep 0.3; pause_niced; done) &
POLL=$!
trap resume EXIT
"$@"
