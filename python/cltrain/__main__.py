"""python -m cltrain ARGS: the CLI this package holds (as the `cltrain` command does)."""

from ._cli import main

main()
