rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; REPO=$(pwd); export REPO; cd /tmp
nproc; uptime
timeout 200 python3 -P -m pyshark.benchmarks --programs saxpy,hotspot,hotspot_rodinia,sgemm,scatter_dups,backprop --sizes small,medium --backends cpu --peers numpy,numba --budget 2 --repeats 7 --wait-idle 20 --no-compile-report --no-chart --out $OUT/subset > $OUT/subset.txt 2>&1
grep -v "^  " $OUT/subset.txt | tail -45
