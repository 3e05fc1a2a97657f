"""`python -m radmetrics ...` is the `radmetrics` command (review 25, L7: only `python -m radmetrics.cli` worked)."""
from radmetrics.cli import main

main()
