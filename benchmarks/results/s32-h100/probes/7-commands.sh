rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; REPO=$(pwd); export REPO; cd /tmp
uptime
P=$REPO/scripts/thread_sleep_probe.py
export WINDOWS=4
for L in 0 1; do
for B in "hotspot_rodinia small" "sum small" "backprop small" "scatter_distinct small" "locvolcalib_outside small" "sgemm small"; do
  set -- $B
  for cfg in "X=1" "PYSHARK_YIELD_US=0"; do
    echo "== LOADED=$L $1 $2 $cfg"; env $cfg LOADED=$L BENCH=$1 SIZE=$2 timeout 60 python3 -P $P 2>&1 | tail -1
  done
done
done 2>&1 | tee $OUT/yield.txt
