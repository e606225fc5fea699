#!/usr/bin/python3
"""What the test project holds, and what is new in it since an earlier inventory.

  scripts/openstack/inventory.py save FILE [--env ENV_FILE]
  scripts/openstack/inventory.py check FILE [--env ENV_FILE]

`save` writes the inventory (scripts/openstack/leftovers.py lists what: load balancers,
floating IPs, servers, ports, security groups and their rules, networks, subnets, routers and
their extra routes, Keystone regions, RBAC policies on the project) as JSON to FILE. `check`
takes it again and lists what is new since FILE, one line each (kind, id, name: a test's name
or cluster name says which test made it); exit 0 when nothing is new, 1 when something is (a
test leaked it), 2 on usage errors. scripts/test.sh saves one before the tests that use the
stack and checks after the last of them. The env file is --env, else $CCM_OPENSTACK_ENV, else
target/openstack/env.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import envfile  # noqa: E402
import leftovers  # noqa: E402


def take(env_file):
    import openstack
    env = envfile.read(env_file)
    if not env:
        print('inventory: no env file at %s: start the stack with scripts/openstack-up.sh'
              % env_file, file=sys.stderr)
        sys.exit(1)
    os.environ['OS_CLIENT_CONFIG_FILE'] = env['OPENSTACK_CLOUDS_YAML']
    conn = openstack.connect(cloud=env['OPENSTACK_CLOUD_PASSWORD'])
    admin = openstack.connect(cloud=env['OPENSTACK_CLOUD_ADMIN'])
    return leftovers.inventory(conn, admin)


def main():
    p = argparse.ArgumentParser(prog='inventory.py', description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('action', choices=['save', 'check'])
    p.add_argument('file')
    p.add_argument('--env', help='env file of openstack-up.sh [env: CCM_OPENSTACK_ENV]')
    a = p.parse_args()
    now = take(envfile.path(a.env))
    if a.action == 'save':
        with open(a.file, 'w') as f:
            json.dump(now, f)
        print('inventory: %d objects in the test project' % len(now), file=sys.stderr)
        return
    with open(a.file) as f:
        before = json.load(f)
    new = leftovers.new_since(before, now)
    if not new:
        print('inventory: nothing new in the test project (%d objects, as before)' % len(now),
              file=sys.stderr)
        return
    print('inventory: %d objects left in the test project since the tests began:' % len(new))
    for o in sorted(new, key=lambda o: (o['kind'], o['name'])):
        text = [t for t in o['text'][1:] if t]
        if o.get('owner') or o.get('device'):
            text.append('%s %s' % (o.get('owner') or 'no owner', o.get('device') or ''))
        print('  %-20s %s  %s%s' % (o['kind'], o['id'], o['name'],
                                   ('  (%s)' % '; '.join(text)) if text else ''))
    sys.exit(1)


if __name__ == '__main__':
    main()
