"""`python -m vectorstep` is the `vectorstep` command."""

from vectorstep.cli import main

main()
