rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; REPO=$(pwd); export REPO; cd /tmp
uptime
export AFTER=kmeans NUMBA=1 WINDOWS=4
for v in "THREADS=1" "THREADS=1 THPOFF=1" "THREADS=16" "THREADS=16 THPOFF=1" "THREADS=4" "THREADS=8"; do echo "== $v"; env $v timeout 100 python3 -P $REPO/scripts/thp_probe.py 2>&1; done | tee $OUT/thp-threads.txt
