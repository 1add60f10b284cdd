"""``python -m transport.driver``: the standalone media driver (as ``aeromq driver``)."""

import sys

from transport.driver._main import main

sys.exit(main())
