import sys

from doit.data.cli import main

sys.exit(main())
