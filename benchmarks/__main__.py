"""`python -m benchmarks [options]`: the same as `pyshark bench [options]`."""
import sys

from .runner import main

sys.exit(main())
