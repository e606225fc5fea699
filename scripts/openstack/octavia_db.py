#!/usr/bin/python3
"""Octavia's schema in SQLite without alembic, whose migrations cannot ALTER constraints there:
the tables from Octavia's models, then the lookup rows and DELETED placeholders the migrations
would insert. `octavia-db-manage stamp head` marks it current afterwards.

usage: octavia_db.py --config-file CONF
"""
import sys

from oslo_config import cfg
from oslo_db.sqlalchemy import session as db_session

from octavia.common import config
from octavia.common import constants as c
from octavia.db import base_models
from octavia.db import models as m

# Each lookup table and the names it must hold.
LOOKUPS = [
    (m.ProvisioningStatus, c.SUPPORTED_PROVISIONING_STATUSES),
    (m.OperatingStatus, c.SUPPORTED_OPERATING_STATUSES),
    (m.HealthMonitorType, c.SUPPORTED_HEALTH_MONITOR_TYPES),
    (m.Algorithm, c.SUPPORTED_LB_ALGORITHMS),
    (m.Protocol, c.SUPPORTED_PROTOCOLS),
    (m.SessionPersistenceType, c.SUPPORTED_SP_TYPES),
    (m.AmphoraRoles, c.SUPPORTED_AMPHORA_ROLES),
    (m.LBTopology, c.SUPPORTED_LB_TOPOLOGIES),
    (m.VRRPAuthMethod, c.SUPPORTED_VRRP_AUTH),
    (m.L7RuleType, c.SUPPORTED_L7RULE_TYPES),
    (m.L7RuleCompareType, c.SUPPORTED_L7RULE_COMPARE_TYPES),
    (m.L7PolicyAction, c.SUPPORTED_L7POLICY_ACTIONS),
    (m.ClientAuthenticationMode, c.SUPPORTED_CLIENT_AUTH_MODES),
]


def placeholders():
    """The rows that DELETED flavors and availability zones point at."""
    nil, deleted = c.NIL_UUID, c.DELETED
    return [
        m.FlavorProfile(id=nil, name='DELETED-PLACEHOLDER', provider_name=deleted,
                        flavor_data='{}'),
        m.Flavor(id=nil, flavor_profile_id=nil, name='DELETED-PLACEHOLDER', enabled=False,
                 description='Placeholder for DELETED LBs with DELETED flavors'),
        m.AvailabilityZoneProfile(id=nil, name='DELETED-PLACEHOLDER', provider_name=deleted,
                                  availability_zone_data='{}'),
        m.AvailabilityZone(availability_zone_profile_id=nil, name=nil, enabled=False,
                           description='Placeholder for DELETED LBs with DELETED zones'),
    ]


def main():
    config.init(sys.argv[1:])
    facade = db_session.EngineFacade.from_config(cfg.CONF, sqlite_fk=True)
    base_models.BASE.metadata.create_all(facade.get_engine())
    session = facade.get_session(expire_on_commit=True, autocommit=True)
    rows = [table(name=name) for table, names in LOOKUPS for name in names] + placeholders()
    for row in rows:  # one transaction each: the placeholders refer to each other in order
        with session.begin():
            session.add(row)
    print('octavia schema: %d tables, %d rows' % (len(base_models.BASE.metadata.tables), len(rows)))


if __name__ == '__main__':
    main()
