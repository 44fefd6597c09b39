rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; REPO=$(pwd); export REPO; cd /tmp
nproc; uptime
timeout 480 python3 -P -m pyshark.benchmarks --sizes tiny,small,medium --backends cpu --peers numpy,numba --budget 2 --repeats 5 --wait-idle 20 --deadline 450 --no-chart --out $OUT/cpu-suite > $OUT/cpu-suite.txt 2>&1
grep -v "^  " $OUT/cpu-suite.txt | grep "note\|ps.cpu" | head -120
