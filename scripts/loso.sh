#!/usr/bin/env bash
# Leave-one-source-out: for each source X, tune the embedder and train the gate without X, then measure both on X's
# own registry (tools never seen, in a style never seen). Reduced budget against scripts/build_models.sh (STEPS gate
# steps, 150 calibration turns a class); the SLB row is the LOSO embedder alone.
#
#   SOURCES="toolalpaca apibank" bash scripts/loso.sh OUT
set -euo pipefail
OUT=${1:?usage: loso.sh OUT}
DATA=${DATA:-../shared/data}
NEXUS=${NEXUS:-.venv/bin/nexus}
STEPS=${STEPS:-250}
CAP=${CAP:-500}
SCORER=${SCORER:-split-cosine}
SOURCES=${SOURCES:-"toolalpaca apibank rotbench tooltalk"}
mkdir -p "$OUT"
run() { echo "+ $*" >&2; nice -n 10 "$@"; }
WORK=$OUT/work
mkdir -p "$WORK"
[[ -d $WORK/t1000 ]] || run $NEXUS data bfcl --src "$DATA/bfcl" --size 1000 --no-tool 200 --out "$WORK/t1000"
[[ -d $WORK/t250 ]] || run $NEXUS data bfcl --src "$DATA/bfcl" --size 250 --no-tool 200 --out "$WORK/t250"
EXCLUDE=(--exclude "$WORK/t1000/tools.json" --exclude "$WORK/t250/tools.json")
[[ -d $WORK/bfcl_pool ]] || run $NEXUS gate pool --src "$DATA/bfcl" "${EXCLUDE[@]}" --out "$WORK/bfcl_pool"
for X in $SOURCES; do
  D=$OUT/$X
  mkdir -p "$D"
  # X's sibling sets share its tools (rotbench_gpt4 holds rotbench's 569 tools): they are left out with it
  SKIP=(--skip-source "$X")
  for SIB in "$DATA"/train/"$X"_*/; do if [[ -d $SIB ]]; then SKIP+=(--skip-source "$(basename "$SIB")"); fi; done
  if [[ ! -f $D/embedder/nexus-tuning.json ]]; then
    rm -rf "$D/embedder"
    NEXUS_EMBEDDER=minilm run $NEXUS slb tune --data "$WORK/bfcl_pool" --data "$DATA/train" "${SKIP[@]}" \
      --exclude-tools "$WORK/t1000/tools.json" --exclude-tools "$WORK/t250/tools.json" \
      --max-per-source "$CAP" --max-length 64 --epochs 1 --seed 0 --compact --out "$D/embedder"
  fi
  if [[ ! -f $D/gate/nexus_gate.json ]]; then
    NEXUS_EMBEDDER="$D/embedder" run $NEXUS gate train --data "$WORK/bfcl_pool" --data "$DATA/train" "${EXCLUDE[@]}" \
      "${SKIP[@]}" --no-self --max-per-source "$CAP" --max-calibration 150 --steps "$STEPS" --base "$D/embedder" \
      --scorer "$SCORER" --seed 0 --out "$D/gate" --json "$D/gate-train.json"
  fi
  NEXUS_EMBEDDER="$D/embedder" run $NEXUS gate eval --tools "$DATA/train/$X/tools.json" --queries "$DATA/train/$X/queries.jsonl" \
    --model "$D/gate" --allow-overlap --run-dir "$D/eval" --json "$D/eval.json"  # a service can sit in two sources
    # under other names (data README): the few shared tools are counted in the output (overlap_with_training)
  NEXUS_EMBEDDER=minilm run $NEXUS bench routing --tools "$DATA/train/$X/tools.json" --queries "$DATA/train/$X/queries.jsonl" \
    --scale 0 --run-dir "$D/minilm" --json "$D/minilm.json"
done
