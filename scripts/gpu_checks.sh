#!/usr/bin/env bash
# The checks a lent GPU machine runs, in one go: the fp64 verification with every op on the GPU, the benchmark of the
# chunked against the recurrent forms, decoding against context, the app's heavy live runs at the GPU's caps
# (scripts/measure_caps.py), then the capacity record's GPU part (data/learned_memory_capacity_gpu_grid.json) for the
# time that is left. Each step has its own time limit, its output goes to $OUT/log.txt, and a failed step does not
# stop the others (the script exits 1 at the end, naming it).
#
#     OUT=results/ scripts/gpu_checks.sh              # on the GPU machine, from the repository's root
#     DEVICE=cpu TOTAL_SECONDS=200 OUT=/tmp/g scripts/gpu_checks.sh   # the same steps on a CPU, to try the script
#
# PYTHON (default python3) is the interpreter that has torch; the sweep appends to $RECORD (default
# data/learned_memory_capacity_gpu.jsonl, resuming it) the points of $GRID, and the file is copied to $OUT every 10 s
# and at the end. STEPS (default "verify bench decode caps sweep") runs only the steps named.
set -u
DEVICE=${DEVICE:-cuda}
PYTHON=${PYTHON:-python3}
OUT=${OUT:?set OUT to a folder for the logs}
TOTAL_SECONDS=${TOTAL_SECONDS:-570}  # the whole script's budget: the sweep gets what the steps before it left
SWEEP_WORKERS=${SWEEP_WORKERS:-14}
RECORD=${RECORD:-data/learned_memory_capacity_gpu.jsonl}
GRID=${GRID:-data/learned_memory_capacity_gpu_grid.json}
STEPS=" ${STEPS:-verify bench decode caps sweep} "
export PYTHONUNBUFFERED=1 LINEAGE_DEVICE=$DEVICE
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}  # scripts/ import lineage and ui, which a bare machine has not installed
mkdir -p "$OUT"

LOG=$OUT/log.txt  # every step's whole output, in order (a device machine returns few files)

step() {  # step NAME SECONDS COMMAND...: run it under a time limit, its output appended to $LOG, its tail shown
    local name=$1 limit=$2
    shift 2
    [[ $STEPS == *" $name "* ]] || return 0
    local start=$SECONDS part
    part=$(mktemp)
    echo "== $name (limit ${limit} s): $*" | tee -a "$LOG"
    timeout --signal=INT --kill-after=20 "$limit" "$@" >"$part" 2>&1
    local rc=$?
    cat "$part" >>"$LOG"
    tail -n 40 "$part"
    rm -f "$part"
    echo "== $name: exit $rc after $((SECONDS - start)) s" | tee -a "$LOG"
    steps+="$name $rc $((SECONDS - start)) s; "
    # a failed step fails the script at the end; the sweep stopped at its time limit (124) has only run out of time
    if [[ $rc != 0 && ! ($name == sweep && $rc == 124) ]]; then failed+="$name "; fi
}

steps="" failed=""
{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
    "$PYTHON" -c "import sys, torch; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())"
    nproc
} 2>&1 | tee -a "$LOG"

step verify 60 "$PYTHON" -m lineage verify --device "$DEVICE"
step bench 130 "$PYTHON" -m lineage bench --threads 1 --json "$OUT/bench.json"
step decode 60 "$PYTHON" -m lineage bench decode --threads 1 --json "$OUT/decode.json"
step caps 80 "$PYTHON" scripts/measure_caps.py --repeats 2 --json "$OUT/caps.json"

# the sweep: copy the record out every 10 s and at the end (the sweep writes each point as it finishes, so a stop at
# the limit loses only the points in flight)
(while sleep 10; do cp -f "$RECORD" "$OUT/" 2>/dev/null; done) &
copier=$!
step sweep $((TOTAL_SECONDS - SECONDS - 10)) "$PYTHON" -m lineage sweep "$GRID" --out "$RECORD" --device "$DEVICE" \
    --workers "$SWEEP_WORKERS"
kill $copier 2>/dev/null
cp -f "$RECORD" "$OUT/" 2>/dev/null
wc -l "$RECORD" 2>/dev/null | tee -a "$LOG"
echo "steps (name, exit, seconds): $steps" | tee -a "$LOG"
if [[ -n $failed ]]; then
    echo "failed: ${failed% }" | tee -a "$LOG"
    exit 1
fi
