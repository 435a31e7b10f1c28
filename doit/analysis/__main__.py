import sys

from doit.analysis.cli import main

sys.exit(main())
