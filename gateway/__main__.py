"""`python -m gateway` runs the command-line interface."""

from .ros.dds import isolation

isolation.isolate()  # on the gateway's own ROS whatever the shell, before anything else loads
from .cli import main  # noqa: E402

raise SystemExit(main())
