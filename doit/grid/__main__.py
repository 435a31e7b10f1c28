import sys

from doit.grid.cli import main

sys.exit(main())
