"""``python -m aeromq.transport.driver``: the standalone media driver (as ``aeromq driver``)."""

import sys

from aeromq.transport.driver._main import main

sys.exit(main())
