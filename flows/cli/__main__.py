"""`python -m flows.cli` is the `ergon` command."""

from flows.cli import main

main()
