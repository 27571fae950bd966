import sys

from smpy.cli.main import main

sys.exit(main())
