#!/usr/bin/env bash
# Airflow 3 for the DAGs `kedro dag` writes, in a venv of its own: it does not install beside the project's
# pinned packages (Airflow 3.3 caps fastapi below the project's pin), and the DAG needs nothing of the project's.
#
#   scripts/install-airflow.sh [VENV]      # default VENV: .venv-airflow in the project folder
#   source .venv-airflow/airflow.env       # then: airflow db migrate; airflow dags test iclfs_expr 2026-01-01
#
# VENV/airflow.env sets AIRFLOW_HOME to VENV/home (not ~/airflow), Airflow's DAGs folder to the project's
# airflow_dags/, no example DAGs (Airflow otherwise loads its ~80 examples beside yours), and puts VENV/bin on
# PATH. The versions are .ci/airflow-constraints.txt's, the set the deployment test runs (tests/test_deployment.py).
# PYTHON picks the interpreter (default python3, 3.11 or later). On failure a venv this script made is removed,
# so no half-installed Airflow is left for a test or a user to find; an existing folder is never removed.
set -euo pipefail
project="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$project/.venv-airflow}"
python="${PYTHON:-python3}"
airflow_version="3.3.2"

made=""
if [ ! -e "$venv" ]; then made=1; fi
cleanup() {
  if [ -n "$made" ]; then rm -rf -- "$venv"; fi
  echo "install-airflow: Apache Airflow could not be installed in $venv (see pip's message above)" >&2
}
trap cleanup ERR

"$python" -m venv "$venv"
"$venv/bin/pip" install -q -c "$project/.ci/airflow-constraints.txt" "apache-airflow==$airflow_version"
venv="$(cd "$venv" && pwd)"
mkdir -p "$venv/home"
# %q: a folder name holding quotes, spaces or $ stays one word when the file is sourced
{
  echo "# Written by scripts/install-airflow.sh: source it before running airflow for this project."
  printf 'export AIRFLOW_HOME=%q\n' "$venv/home"
  echo "export AIRFLOW__CORE__LOAD_EXAMPLES=False"
  printf 'export AIRFLOW__CORE__DAGS_FOLDER=%q\n' "$project/airflow_dags"
  printf 'export PATH=%q:"$PATH"\n' "$venv/bin"
} > "$venv/airflow.env"
trap - ERR
echo "Apache Airflow $airflow_version is in $venv: run 'source $venv/airflow.env' in the project folder, then airflow db migrate"
