"""`python -m gpudb.cli`: the `gpudb` command."""

from gpudb.cli import main

main()
