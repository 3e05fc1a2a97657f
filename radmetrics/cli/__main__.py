from radmetrics.cli import main

main()
