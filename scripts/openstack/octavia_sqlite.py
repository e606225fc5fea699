"""SQLite write locking for Octavia's API and worker, imported before Octavia itself.

Both processes (and the worker's RPC threads) write one SQLite file. pysqlite's deferred
transactions fail at once with "database is locked" when a transaction that first read then
writes meets another connection's commit; no busy wait applies to that case. So every
transaction takes the write lock up front (BEGIN IMMEDIATE) and waits up to 30 s for it.
oslo.db emits its own deferred BEGIN unless the connection is marked as inside a transaction;
this class-level listener runs before the engine's and marks it the same way.
"""
import sqlite3

from sqlalchemy import event
from sqlalchemy.engine import Engine


@event.listens_for(Engine, 'connect')
def _on_connect(dbapi_connection, _record):
    if isinstance(dbapi_connection, sqlite3.Connection):
        dbapi_connection.isolation_level = None
        dbapi_connection.execute('PRAGMA busy_timeout = 30000')


@event.listens_for(Engine, 'begin')
def _on_begin(connection):
    if connection.dialect.name == 'sqlite' and 'in_transaction' not in connection.info:
        connection.exec_driver_sql('BEGIN IMMEDIATE')
        connection.info['in_transaction'] = True
