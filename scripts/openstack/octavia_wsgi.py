"""The octavia-api application for uwsgi (--wsgi-file), with octavia_sqlite's locking.
uwsgi passes Octavia's own arguments (--config-file ...) through --pyargv."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import octavia_sqlite  # noqa: E402,F401

from octavia.api.app import setup_app  # noqa: E402

application = setup_app()
