rm -rf /tmp/site; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
export PYTHONPATH=/tmp/site; mkdir -p /tmp/icd; echo /usr/local/nvidia/lib64/libnvidia-opencl.so.1 > /tmp/icd/nvidia.icd; export OCL_ICD_VENDORS=/tmp/icd; REPO=$(pwd); export REPO; cd /tmp
nproc; uptime
python3 -P -c "from pyshark.codegen.cpu import team; print(team.kind(), team.max_threads())"
timeout 470 python3 -P -m pyshark.benchmarks --sizes tiny,small,medium --backends cpu --peers numpy,numba --budget 2 --repeats 5 --wait-idle 20 --deadline 440 --no-chart --out $OUT/cpu-suite > $OUT/cpu-suite.txt 2>&1
P=$REPO/scripts/thread_sleep_probe.py
export WINDOWS=4
for B in "hotspot_rodinia small" "sum small" "backprop small" "locvolcalib_outside small"; do
  set -- $B
  for cfg in "PYSHARK_SPIN_US=300" "PYSHARK_THREADS=gomp"; do
    echo "== LOADED $1 $2 $cfg"; env $cfg LOADED=1 BENCH=$1 SIZE=$2 timeout 60 python3 -P $P 2>&1 | tail -1
  done
done > $OUT/loaded.txt 2>&1
grep -v "^  " $OUT/cpu-suite.txt | tail -95
cat $OUT/loaded.txt
