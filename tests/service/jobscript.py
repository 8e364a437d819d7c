"""A tiny job that follows the workload contract, written as a shell script so it starts fast:
it logs its GPUs to gpu_log.txt, counts ``steps`` steps of 0.1 s, saves its step to the
checkpoint directory and exits 75 on SIGTERM, resumes from the checkpoint, writes its status
file, and appends a line to done.txt when it finishes."""

from __future__ import annotations

from pathlib import Path

SCRIPT = r"""
log() { echo "$(date +%s.%N) $*" >> gpu_log.txt; }
i=$(cat "$DLSCHED_CHECKPOINT_DIR/step" 2>/dev/null || echo 0)
ck="$DLSCHED_CHECKPOINT_DIR/step"
trap 'echo $i > "$ck.tmp"; mv "$ck.tmp" "$ck"; log stop; exit 75' TERM
log "start node=$DLSCHED_NODE gpus=$CUDA_VISIBLE_DEVICES"
echo "resumed-from $i" >> resume.txt
while [ "$i" -lt "$1" ]; do
  sleep 0.1 & wait $!
  i=$((i+1))
  p=$(echo "$i $1" | awk '{print $1/$2}')
  printf '{"step": %d, "progress": %s, "samples_per_s": 10.0}' "$i" "$p" > status.tmp
  mv status.tmp "$DLSCHED_STATUS_FILE"
done
log stop
echo done >> done.txt
"""


def write_job(directory: Path) -> Path:
    path = directory / "job.sh"
    path.write_text(SCRIPT)
    return path


def job_command(script: Path, steps: int) -> tuple[str, ...]:
    return ("sh", str(script), str(steps))
