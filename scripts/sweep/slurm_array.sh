#!/usr/bin/env bash
# One line of a jobs.txt per Slurm array task (docs/parts/sweeps.md):
#   n=$(wc -l < sweep/jobs.txt)
#   sbatch --array=1-$n scripts/sweep/slurm_array.sh sweep/jobs.txt
# Each task runs line $SLURM_ARRAY_TASK_ID with bash; when all are done,
#   python3 scripts/sweep/gather.py -o sweep.csv sweep/out
#SBATCH --job-name=nxsim-sweep
#SBATCH --cpus-per-task=1
#SBATCH --output=nxsim-sweep-%A_%a.log
set -euo pipefail
jobs=${1:?usage: slurm_array.sh JOBS.txt}
: "${SLURM_ARRAY_TASK_ID:?run this through sbatch --array}"
export OPENBLAS_NUM_THREADS=1
line=$(sed -n "${SLURM_ARRAY_TASK_ID}p" "$jobs")
[ -n "$line" ] || { echo "slurm_array.sh: $jobs has no line $SLURM_ARRAY_TASK_ID" >&2; exit 1; }
bash -c "$line"
