import sys

from doit.eval.cli import main

sys.exit(main())
