#!/usr/bin/python3
"""neutron-server (Debian's Zed) for the test stack: the same command line, with SQLite's
"database is locked" treated as the deadlock it is, so that Neutron retries it.

On SQLite a deferred transaction that read and then writes fails at once with "database is
locked" when another connection committed meanwhile (no busy wait applies). oslo.db maps
MySQL's and PostgreSQL's deadlocks to DBDeadlock, which Neutron's API layer retries with
backoff; SQLite's equivalent goes through as a 500 (seen: Octavia's VIP security-group rules
failing while the controller creates ports, and the load balancer going to ERROR). The
write locking of octavia_sqlite.py does not suit Neutron: under eventlet, a busy wait blocks
the whole process, including the greenthread that holds the lock.
"""
import sys

# Imported first: neutron's eventlet package monkey-patches before anything opens a socket.
from neutron.cmd.eventlet.server import main  # noqa: E402
from oslo_db.sqlalchemy import exc_filters  # noqa: E402
from sqlalchemy import exc as sqla_exc  # noqa: E402

exc_filters.filters('sqlite', sqla_exc.OperationalError, r'.*database is locked.*')(
    exc_filters._deadlock_error)

if __name__ == '__main__':
    sys.exit(main())
