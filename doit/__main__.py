import sys

from doit.cli import main

sys.exit(main())
