#!/usr/bin/env bash
# MXNet 1.9.1's own unit tests, test by test, on real MXNet 1.9.1 and on hybridgpu (README.md).
#
#   run.sh MXNET_MIRROR [PROJECT]
#
#   MXNET_MIRROR  a git mirror of apache/mxnet holding the tag 1.9.1 (the folder that fetching
#                 github:apache/mxnet prints); the test files are read from it with git archive.
#   PROJECT       the hybridgpu checkout (default: the current directory).
#
# Env knobs:
#   FILES     test files to run, space-separated (default: the 25 below), e.g.
#             FILES="test_attr.py test_init.py" for a quick look
#   MX_PY     the real MXNet 1.9.1 (default: PROJECT/.oracle/bin/python, the project's oracle venv:
#             python3.11 -m venv .oracle && .oracle/bin/pip install numpy==1.23.5 mxnet==1.9.1)
#   HG_PY     the Python that runs hybridgpu (default: a venv SCRATCH/venv-hg made here from the
#             same base Python as MX_PY, numpy 1.23.5 like the oracle, PROJECT/src on its path)
#   SCRATCH   where everything is written (default: ${TMPDIR:-/tmp}/mxnet-unittests); the
#             results end in SCRATCH/results/ (summary.md, per_test.json)
#   REF (1.9.1), TIMEOUT (per test, s; 60), TIMEOUT2 (re-run of the tests that timed out; 240),
#   FILE_CAP (per file, s; 900), SEED (MXNET_TEST_SEED/MXNET_MODULE_SEED; 1234),
#   SKIP_RUN=1 (only re-analyze the last run), BASE_PY (the Python the default HG_PY venv is made from)
#   MX_CACHE  where the MXNet side's results are kept per file (default SCRATCH/mx_cache/REF-SEED):
#             MXNet 1.9.1 does not change, so a file whose MXNet results are there is not run on
#             MXNet again (only hybridgpu runs); MX_RERUN=1 runs the MXNet side again anyway
set -euo pipefail
MIRROR=$(cd "${1:?usage: run.sh MXNET_MIRROR [PROJECT]}" && pwd)
PROJECT=$(cd "${2:-${PROJECT:-$PWD}}" && pwd)
[ -d "$PROJECT/src/hybridgpu" ] || {
  echo "no src/hybridgpu in $PROJECT: give the project checkout as the second argument" >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
REF=${REF:-1.9.1}
S=${SCRATCH:-${TMPDIR:-/tmp}/mxnet-unittests}
MX_PY=${MX_PY:-$PROJECT/.oracle/bin/python}
TIMEOUT=${TIMEOUT:-60}; TIMEOUT2=${TIMEOUT2:-240}; FILE_CAP=${FILE_CAP:-900}; SEED=${SEED:-1234}
MX_CACHE=${MX_CACHE:-$S/mx_cache/$REF-$SEED}
ALL="test_attr.py test_base.py test_engine.py test_thread_local.py test_viz.py test_init.py
test_infer_shape.py test_executor.py test_recordio.py test_autograd.py test_loss.py test_metric.py
test_gluon_trainer.py test_gluon_data.py test_optimizer.py test_kvstore.py test_symbol.py
test_random.py test_io.py test_module.py test_contrib_control_flow.py test_gluon_model_zoo.py
test_gluon_rnn.py test_ndarray.py test_gluon.py"
FILES=$(for f in ${FILES:-$ALL}; do
  case "$f" in test_operator.py|test_numpy_*) echo "skipping $f: not part of this measurement" >&2 ;;
               *) echo "$f" ;; esac; done)
[ -n "$FILES" ] || { echo "no test files to run" >&2; exit 2; }
T=$S/tests; RUNS=$S/runs; OUTDIR=$S/results
TOOLS=$S/tools; TOOLS_NP1=$S/tools_np1; TOOLS_PYTEST=$S/tools_pytest; SHIM=$S/shim; HARNESS=$S/harness

"$MX_PY" -c 'import mxnet, numpy; assert mxnet.__version__ == "1.9.1", mxnet.__version__
assert numpy.__version__ == "1.23.5", "numpy " + numpy.__version__ + " (MXNet 1.9.1 needs 1.23.5)"' || {
  echo "MX_PY=$MX_PY is not a Python with mxnet 1.9.1; make the oracle venv in the checkout:" >&2
  echo "  python3.11 -m venv .oracle && .oracle/bin/pip install numpy==1.23.5 mxnet==1.9.1" >&2
  exit 2; }
BASE_PY=${BASE_PY:-$("$MX_PY" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')}
echo "== MXNet tests: $(git --git-dir="$MIRROR" rev-parse "$REF^{commit}") ($REF); project: $PROJECT"
echo "== scratch: $S"
mkdir -p "$S"

# 1. tools (test infrastructure, the same on both sides): nose (1.9.1's tests import nose.tools),
#    pytest-timeout, scipy (imported by several test files), the result recorder; pytest for the
#    MXNet side when the oracle venv has none (the same version as the hybridgpu side)
if [ ! -d "$TOOLS/nose" ]; then
  "$MX_PY" -m pip install -q --no-deps --target "$TOOLS" nose==1.3.7 pytest-timeout==2.4.0
fi
if [ ! -d "$TOOLS_NP1/scipy" ]; then
  "$MX_PY" -m pip install -q --no-deps --target "$TOOLS_NP1" scipy==1.11.4
fi
MX_PP=$TOOLS:$TOOLS_NP1
if ! "$MX_PY" -c 'import pytest' 2>/dev/null; then
  [ -d "$TOOLS_PYTEST/pytest" ] || "$MX_PY" -m pip install -q --target "$TOOLS_PYTEST" pytest==9.2.0
  MX_PP=$MX_PP:$TOOLS_PYTEST
fi
cp "$HERE/tools/mxrecord.py" "$TOOLS/"
mkdir -p "$SHIM" "$HARNESS"
cp "$HERE/shim/sitecustomize.py" "$SHIM/"          # the name-only alias mxnet -> hybridgpu
cp "$HERE/tools/_mxmissing.py" "$HARNESS/"         # placeholders for the import-tolerant copy
if [ -z "${HG_PY:-}" ]; then
  HG_PY=$S/venv-hg/bin/python
  if [ ! -x "$HG_PY" ]; then
    "$BASE_PY" -m venv "$S/venv-hg"
    "$HG_PY" -m pip install -q numpy==1.23.5 threadpoolctl==3.8.0 \
        pytest==9.2.0 pillow graphviz==0.21
  fi
  echo "$PROJECT/src" > "$("$HG_PY" -c 'import site;print(site.getsitepackages()[0])')/hybridgpu_src.pth"
fi
HG_PP=$SHIM:$HARNESS:$TOOLS:$TOOLS_NP1

if [ "${SKIP_RUN:-0}" != 1 ]; then
  # 2. extract MXNet's tests (pristine copy for MXNet and for the strict check, import-tolerant
  #    copy for hybridgpu)
  rm -rf "$T" && mkdir -p "$T/src" && cd "$T/src"
  git --git-dir="$MIRROR" archive "$REF" pytest.ini tests/python/unittest tests/python/common \
      tests/python/train 2>/dev/null | tar -x
  rm -f tests/python/unittest/test_operator.py tests/python/unittest/test_numpy_*.py
  mkdir -p tests/data
  cp -r "$T/src" "$T/mx"
  cp -r "$T/src" "$T/hg"
  cp -r "$T/src" "$T/strict"
  (cd "$T/hg/tests/python" && "$HG_PY" "$HERE/tools/rewrite_imports.py" \
      unittest/common.py unittest/test_*.py train/test_bucketing.py > "$T/rewrite.log")

  # 3. strict: does each unmodified file import under hybridgpu at all?
  rm -rf "$RUNS"; mkdir -p "$RUNS"
  "$MX_PY" "$HERE/tools/strict_collect.py" --python "$HG_PY" \
      --pythonpath "$SHIM:$TOOLS:$TOOLS_NP1" --tree "$T/strict" \
      --out "$RUNS/strict.json" $FILES

  # 4. both sides, in parallel (one file at a time per side, 1 BLAS/OMP thread each)
  #    MXNet side: only the files without cached results (MX_CACHE)
  MX_FILES=$(for f in $FILES; do
    if [ "${MX_RERUN:-0}" = 1 ] || ! "$MX_PY" "$HERE/tools/mxcache.py" has "$MX_CACHE" "$f"; then
      echo "$f"; fi; done)
  mkdir -p "$RUNS/mx"; : > "$RUNS/mx.out"
  if [ -n "$MX_FILES" ]; then
    "$MX_PY" "$HERE/tools/runner.py" --python "$MX_PY" --pythonpath "$MX_PP" \
        --tree "$T/mx" --out "$RUNS/mx" --timeout "$TIMEOUT" --file-cap "$FILE_CAP" \
        --seed "$SEED" $MX_FILES > "$RUNS/mx.out" 2>&1 &
    MXPID=$!
  else
    MXPID=
  fi
  "$MX_PY" "$HERE/tools/runner.py" --python "$HG_PY" --pythonpath "$HG_PP" \
      --tree "$T/hg" --out "$RUNS/hg" --timeout "$TIMEOUT" --file-cap "$FILE_CAP" \
      --seed "$SEED" $FILES > "$RUNS/hg.out" 2>&1 &
  HGPID=$!
  wait $MXPID $HGPID
  MX_LIST=" $(echo $MX_FILES) "
  for f in $FILES; do
    case "$MX_LIST" in *" $f "*) ;; *) echo "$f (MXNet side: cached)" >> "$RUNS/mx.out" ;; esac
  done
  echo "== files (MXNet | hybridgpu): status, seconds"
  paste "$RUNS/mx.out" "$RUNS/hg.out"

  # 4b. tests that hit the per-test timeout (on a busy machine, often contention): run them
  #     again, each side its own list, with TIMEOUT2, and let the re-run's result stand
  RR="$RUNS/rerun"; rm -rf "$RR"; mkdir -p "$RR"
  MXARGS=$("$MX_PY" "$HERE/tools/reruns.py" list "$RUNS/mx" "$RR/mx_")
  HGARGS=$("$MX_PY" "$HERE/tools/reruns.py" list "$RUNS/hg" "$RR/hg_")
  if [ -n "$MXARGS" ]; then
    "$MX_PY" "$HERE/tools/runner.py" --python "$MX_PY" --pythonpath "$MX_PP" \
        --tree "$T/mx" --out "$RR/mx" --timeout "$TIMEOUT2" --file-cap "$FILE_CAP" \
        --seed "$SEED" $MXARGS > "$RR/mx.out" 2>&1 &
  fi
  if [ -n "$HGARGS" ]; then
    "$MX_PY" "$HERE/tools/runner.py" --python "$HG_PY" --pythonpath "$HG_PP" \
        --tree "$T/hg" --out "$RR/hg" --timeout "$TIMEOUT2" --file-cap "$FILE_CAP" \
        --seed "$SEED" $HGARGS > "$RR/hg.out" 2>&1 &
  fi
  wait
  rm -rf "$RUNS/final"
  "$MX_PY" "$HERE/tools/reruns.py" merge "$RUNS/mx" "$RR/mx" "$RUNS/final/mx"
  # keep the MXNet side's fresh results, and bring the cached ones of the other files
  "$MX_PY" "$HERE/tools/mxcache.py" store "$MX_CACHE" "$RUNS/final/mx" "$RUNS/mx" $MX_FILES
  "$MX_PY" "$HERE/tools/mxcache.py" load "$MX_CACHE" "$RUNS/final/mx" "$RUNS/mx" $FILES
  "$MX_PY" "$HERE/tools/reruns.py" merge "$RUNS/hg" "$RR/hg" "$RUNS/final/hg"
fi

# 5. compare and classify (in tracebacks the checkout, the scratch folder and the Python
#    installation read <project>, <scratch>, <python>)
mkdir -p "$OUTDIR"
echo
"$MX_PY" "$HERE/tools/analyze.py" --runs "$RUNS/final" --src "$T/src/tests/python/unittest" \
    --strict "$RUNS/strict.json" --json "$OUTDIR/per_test.json" \
    --scrub "$PROJECT=<project>" --scrub "$S=<scratch>" $FILES \
    | tee "$OUTDIR/summary.md"
echo
echo "== results: $OUTDIR/summary.md, $OUTDIR/per_test.json; raw: $RUNS/final/{mx,hg}/*.jsonl, logs *.log"
