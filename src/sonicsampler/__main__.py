"""`python -m sonicsampler`: the `sonicsampler` command (see cli.py)."""
import sys

from .cli import main

sys.exit(main())
