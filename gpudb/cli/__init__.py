"""The `gpudb` command line: one click group (:mod:`gpudb.cli.main`), one module per command
group; what they share (the context, errors as one line, options, output) is in
:mod:`gpudb.cli.common`. Only this package imports click, and nothing imports it."""

from gpudb.cli import (  # noqa: F401 - each registers its commands on the root group
    bench,
    control,
    database,
    demo,
    evaluate,
    present,
    simulate,
    sources,
    train,
)
from gpudb.cli.main import cli, main  # noqa: F401
