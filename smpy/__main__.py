import gc

gc.disable()  # start-up imports: see smpy.cli._exit.run

from smpy.cli.main import cli  # noqa: E402

cli()
