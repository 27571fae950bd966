from smpy.cli.main import cli

cli()
