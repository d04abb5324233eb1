"""`python -m roofline`: the command line, for a checkout that is not installed."""

from roofline.cli.app import run

run()
