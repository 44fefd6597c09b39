rm -rf /tmp/site /tmp/siteB; python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl; python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . 2>/dev/null
cp -r /tmp/site /tmp/siteB
sed -i 's/^_HUGE_MIN = 1 << 22 /_HUGE_MIN = 1 << 18 /' /tmp/siteB/pyshark/codegen/cpu/emit_alloc.py
grep -n "^_HUGE_MIN" /tmp/siteB/pyshark/codegen/cpu/emit_alloc.py
REPO=$(pwd); export REPO; cd /tmp; uptime
for v in A B A B; do
  if [ $v = A ]; then export PYTHONPATH=/tmp/site PYSHARK_CACHE_DIR=/tmp/cacheA; else export PYTHONPATH=/tmp/siteB PYSHARK_CACHE_DIR=/tmp/cacheB; fi
  for t in 1 16; do echo "== $v"; THREADS=$t timeout 60 python3 -P $REPO/scripts/divide_probe.py; done
done 2>&1 | tee $OUT/stagger.txt
