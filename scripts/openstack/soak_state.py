#!/usr/bin/python3
"""What the chaos soak (scripts/soak.sh, controller/benches/soak) reads and makes in OpenStack.

  soak_state.py state                         the project's load balancers (with listeners,
                                              pools and members), floating IPs, security groups
                                              (with rules) and ports, one JSON object
  soak_state.py decoys-create --cluster C     the decoys: objects that look like the CCM's but
                                              are not (no tag of ours), made before the run;
                                              prints their IDs (JSON)
  soak_state.py decoys-show IDS_JSON          every field of each decoy, as Neutron and Octavia
                                              answer (compared before and after the run)
  soak_state.py decoys-delete IDS_JSON        deletes them (what is gone already is fine)

The decoys: a load balancer named `kube_service_<C>_soak_decoy` (the name a Service `decoy`
would give, which no Service has) with no tags; a floating IP with upstream's description for
that Service and no tags; a security group `lb-sg-decoy-soak-decoy` with upstream's description
and a rule, no tags; and a user's ingress rule in the project's `default` group (which every
node port carries). The env file is --env, else $CCM_OPENSTACK_ENV.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import envfile  # noqa: E402

VOLATILE = ('location',)  # openstacksdk's own bookkeeping, not the server's


def connect(env_file):
    import openstack
    env = envfile.read(env_file)
    if not env:
        sys.exit('soak_state: no env file at %s: start the stack (scripts/openstack-up.sh)'
                 % env_file)
    os.environ['OS_CLIENT_CONFIG_FILE'] = env['OPENSTACK_CLOUDS_YAML']
    return openstack.connect(cloud=env['OPENSTACK_CLOUD_PASSWORD']), env


def members(conn, pool_id):
    try:
        return list(conn.load_balancer.members(pool_id))
    except Exception:  # the pool went away while we read
        return []


def state(conn, _env, _a):
    lbapi, net = conn.load_balancer, conn.network
    lbs = []
    for lb in lbapi.load_balancers():
        listeners = []
        for ref in lb.listeners or []:
            try:
                x = lbapi.get_listener(ref['id'])
            except Exception:
                continue
            listeners.append({'id': x.id, 'protocol': x.protocol, 'port': x.protocol_port,
                              'pool': x.default_pool_id})
        pools = []
        for ref in lb.pools or []:
            pools.append({'id': ref['id'], 'members': sorted(
                '%s:%s' % (m.address, m.protocol_port) for m in members(conn, ref['id']))})
        lbs.append({'id': lb.id, 'name': lb.name, 'tags': lb.tags or [],
                    'description': lb.description or '',
                    'provisioning_status': lb.provisioning_status,
                    'vip_address': lb.vip_address, 'vip_port_id': lb.vip_port_id,
                    'listeners': listeners, 'pools': pools})
    fips = [{'id': f.id, 'address': f.floating_ip_address, 'port_id': f.port_id,
             'description': f.description or '', 'tags': f.tags or []} for f in net.ips()]
    groups = [{'id': g.id, 'name': g.name, 'description': g.description or '',
               'tags': g.tags or [], 'rules': len(g.security_group_rules or [])}
              for g in net.security_groups(project_id=conn.current_project_id)]
    ports = [{'id': p.id, 'name': p.name, 'owner': p.device_owner or '',
              'device_id': p.device_id or '', 'security_groups': p.security_group_ids or [],
              'ips': [ip['ip_address'] for ip in p.fixed_ips or []]} for p in net.ports()]
    return {'loadbalancers': lbs, 'floating_ips': fips, 'security_groups': groups,
            'ports': ports}


def decoys_create(conn, env, a):
    net, lbapi = conn.network, conn.load_balancer
    name = 'kube_service_%s_soak_decoy' % a.cluster
    lb = lbapi.create_load_balancer(name=name, vip_subnet_id=env['OPENSTACK_INTERNAL_SUBNET_ID'],
                                    description='a user made this by hand')
    ids = {'loadbalancer': lb.id}
    fip = net.create_ip(floating_network_id=env['OPENSTACK_EXTERNAL_NETWORK_ID'],
                        description='Floating IP for Kubernetes external service soak/decoy '
                                    'from cluster %s' % a.cluster)
    ids['floating_ip'] = fip.id
    group = net.create_security_group(
        name='lb-sg-decoy-soak-decoy',
        description='Security Group for soak/decoy Service LoadBalancer in cluster %s'
                    % a.cluster)
    ids['security_group'] = group.id
    ids['security_group_rule'] = net.create_security_group_rule(
        security_group_id=group.id, direction='ingress', ethertype='IPv4', protocol='tcp',
        port_range_min=31999, port_range_max=31999, remote_ip_prefix='192.0.2.0/24').id
    default = next(iter(net.security_groups(name='default',
                                            project_id=conn.current_project_id)))
    ids['user_rule'] = net.create_security_group_rule(
        security_group_id=default.id, direction='ingress', ethertype='IPv4', protocol='tcp',
        port_range_min=30000, port_range_max=32767, remote_ip_prefix='198.51.100.0/24',
        description='a user opened the node ports to the office').id
    deadline = time.time() + 180
    while lbapi.get_load_balancer(lb.id).provisioning_status != 'ACTIVE':
        if time.time() > deadline:
            sys.exit('soak_state: the decoy load balancer %s is not ACTIVE after 180 s' % lb.id)
        time.sleep(0.5)
    return ids


def getters(conn):
    net, lbapi = conn.network, conn.load_balancer
    return {'loadbalancer': lbapi.get_load_balancer, 'floating_ip': net.get_ip,
            'security_group': net.get_security_group,
            'security_group_rule': net.get_security_group_rule,
            'user_rule': net.get_security_group_rule}


def decoys_show(conn, _env, a):
    out = {}
    for kind, obj_id in json.loads(a.ids).items():
        try:
            obj = getters(conn)[kind](obj_id).to_dict()
        except Exception as e:  # gone: that is what the comparison reports
            out[kind] = {'missing': type(e).__name__}
            continue
        out[kind] = {k: v for k, v in sorted(obj.items()) if k not in VOLATILE}
    return out


def decoys_delete(conn, _env, a):
    net, lbapi = conn.network, conn.load_balancer
    ids = json.loads(a.ids)
    lbapi.delete_load_balancer(ids['loadbalancer'], ignore_missing=True, cascade=True)
    net.delete_ip(ids['floating_ip'], ignore_missing=True)
    net.delete_security_group_rule(ids['user_rule'], ignore_missing=True)
    net.delete_security_group(ids['security_group'], ignore_missing=True)
    deadline = time.time() + 180
    while lbapi.find_load_balancer(ids['loadbalancer'], ignore_missing=True):
        if time.time() > deadline:
            sys.exit('soak_state: the decoy load balancer is still there after 180 s')
        time.sleep(0.5)
    return {'deleted': sorted(ids)}


def main():
    p = argparse.ArgumentParser(prog='soak_state.py', description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--env', help='env file of openstack-up.sh [env: CCM_OPENSTACK_ENV]')
    sub = p.add_subparsers(dest='cmd', required=True)
    sub.add_parser('state')
    s = sub.add_parser('decoys-create')
    s.add_argument('--cluster', required=True)
    for name in ('decoys-show', 'decoys-delete'):
        sub.add_parser(name).add_argument('ids')
    a = p.parse_args()
    conn, env = connect(envfile.path(a.env))
    run = {'state': state, 'decoys-create': decoys_create, 'decoys-show': decoys_show,
           'decoys-delete': decoys_delete}[a.cmd]
    print(json.dumps(run(conn, env, a), default=str))


if __name__ == '__main__':
    main()
