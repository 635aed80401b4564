"""The cltrain CLI that came with this package, and the calls of it that Python users need.

`main()` is the `cltrain` command of a pip-installed package (pyproject.toml's [project.scripts]):
it runs the binary inside the package (cltrain/bin/cltrain) with the same arguments, so
`venv/bin/cltrain train ...` is the CLI itself, its exit code and lines included.
"""

import os
import subprocess
import sys

from . import _capi, _paths


def cli_path():
    """$CLTRAIN_CLI, else the CLI this package was built or installed with."""
    return _capi.located("CLTRAIN_CLI", _paths.CLI)


def make_model(kind, path, batch_size=None):
    """Writes one of the CLI's built-in models (`cltrain make-model KIND -o PATH`: mlp, mnist-kaggle,
    mobilenetv2, branched, cnn-tiny) and returns PATH; raises CltrainError with the CLI's line if it
    refuses."""
    args = [cli_path(), "make-model", str(kind), "-o", os.fspath(path)]
    if batch_size is not None:
        args += ["--batch_size", str(int(batch_size))]
    try:
        r = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        from . import CltrainError
        raise CltrainError("cltrain CLI %s cannot run: %s" % (args[0], e), 1) from None
    if r.returncode != 0:
        from . import CltrainError
        lines = (r.stderr or r.stdout).strip().splitlines()
        raise CltrainError(lines[-1] if lines else "cltrain make-model exited with %d" % r.returncode, r.returncode)
    return os.fspath(path)


def main():
    cli = cli_path()
    try:
        os.execv(cli, [cli] + sys.argv[1:])
    except OSError as e:
        sys.exit("cltrain: the CLI %s cannot run: %s" % (cli, e))
