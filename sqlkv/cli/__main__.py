"""``python -m sqlkv.cli``: the same program as the ``sqlkv`` console script."""

import sys

from sqlkv.cli.main import main

sys.exit(main())
