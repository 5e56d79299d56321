"""`python -m traceloom ...`: the same as the `traceloom` console script."""
import sys

from ._cli import main

sys.exit(main())
