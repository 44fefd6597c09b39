rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; REPO=$(pwd); export REPO; cd /tmp
nproc; uptime
P=$REPO/scripts/thread_sleep_probe.py
export WINDOWS=4
python3 -P -c "from pyshark.codegen.cpu import team; print(team.kind(), team.max_threads())"
for B in "sgemm small" "hotspot_rodinia small" "locvolcalib_outside small" "sum small" "backprop medium" "srad small"; do
  set -- $B
  for cfg in "PYSHARK_THREADS=gomp" "PYSHARK_THREADS=gomp GOMP_SPINCOUNT=300000" "PYSHARK_SPIN_US=30" "PYSHARK_SPIN_US=100" "PYSHARK_SPIN_US=300" "PYSHARK_SPIN_US=1000"; do
    echo "== $1 $2 $cfg"; env $cfg BENCH=$1 SIZE=$2 timeout 60 python3 -P $P 2>&1 | tail -1
  done
done > $OUT/idle.txt 2>&1
cat $OUT/idle.txt
for B in "hotspot_rodinia small" "sum small" "backprop small"; do
  set -- $B
  for cfg in "PYSHARK_THREADS=gomp" "PYSHARK_THREADS=gomp GOMP_SPINCOUNT=300000" "PYSHARK_SPIN_US=100" "PYSHARK_SPIN_US=1000" "PEER=numba"; do
    echo "== LOADED $1 $2 $cfg"; env $cfg LOADED=1 BENCH=$1 SIZE=$2 timeout 60 python3 -P $P 2>&1 | tail -1
  done
done > $OUT/loaded.txt 2>&1
cat $OUT/loaded.txt
