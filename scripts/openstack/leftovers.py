"""What a test run can leave in the test project, and how it is found and deleted.

`inventory` lists the project's objects (and the admin-side ones tests add: Keystone regions,
RBAC policies) as flat dicts {kind, id, name, text}: `text` is everything a test may have
written its token into (name, description, tags). scripts/openstack/inventory.py compares two
inventories; `openstack_scene.py sweep` deletes what a ledger names or what carries a token.
"""
import re
import time

# Deletion order: a load balancer (cascade) frees its VIP port and floating IP's port; floating
# IPs before the ports they sit on; servers before their ports; ports before the security groups
# on them; networks (their router interfaces first) last; regions and RBAC policies are alone.
ORDER = ['loadbalancer', 'floating-ip', 'server', 'port', 'security-group', 'network',
         'region', 'rbac-policy']

# Ports Neutron makes for its own (DHCP, a floating IP's address) come and go with what owns
# them and are not listed.
OWN_PORTS = ('network:dhcp', 'network:floatingip')


def item(kind, obj_id, name, *text, **detail):
    words = [w for t in text for w in ([t] if isinstance(t, str) else (t or [])) if w]
    out = {'kind': kind, 'id': obj_id, 'name': name or '', 'text': [name or ''] + words}
    out.update(detail)
    return out


def inventory(conn, admin):
    """Every object of the project (conn) a test can create, plus regions and RBAC policies."""
    net, out = conn.network, []
    for lb in conn.load_balancer.load_balancers():
        out.append(item('loadbalancer', lb.id, lb.name, lb.description, lb.tags,
                        status=lb.provisioning_status))
    for f in net.ips():
        out.append(item('floating-ip', f.id, f.floating_ip_address, f.description, f.tags))
    for s in conn.compute.servers():
        out.append(item('server', s.id, s.name, status=s.status))
    for p in net.ports():
        if p.device_owner not in OWN_PORTS:
            out.append(item('port', p.id, p.name, p.description, p.tags,
                            owner=p.device_owner or '', device=p.device_id or '',
                            ips=[ip['ip_address'] for ip in p.fixed_ips or []]))
    groups = list(net.security_groups(project_id=conn.current_project_id))
    for g in groups:
        out.append(item('security-group', g.id, g.name, g.description, g.tags))
        for r in g.security_group_rules or []:
            out.append(item('security-group-rule', r['id'], '%s %s %s-%s from %s' % (
                r.get('direction'), r.get('protocol'), r.get('port_range_min'),
                r.get('port_range_max'), r.get('remote_ip_prefix') or r.get('remote_group_id')),
                r.get('description'), group=g.id))
    for n in net.networks(project_id=conn.current_project_id):
        out.append(item('network', n.id, n.name, n.description, n.tags))
    for s in net.subnets(project_id=conn.current_project_id):
        out.append(item('subnet', s.id, s.name, s.description, s.tags, network=s.network_id))
    for r in net.routers():
        out.append(item('router', r.id, r.name, r.description, r.tags))
        for route in r.routes or []:
            out.append(item('router-route', '%s:%s>%s' % (
                r.id, route['destination'], route['nexthop']),
                '%s via %s' % (route['destination'], route['nexthop']), router=r.id))
    for region in admin.identity.regions():
        out.append(item('region', region.id, region.id, region.description))
    for p in admin.network.rbac_policies():
        if p.target_project_id == conn.current_project_id:
            out.append(item('rbac-policy', p.id, '%s %s' % (p.action, p.object_id)))
    return out


def new_since(before, now):
    """What `now` holds that `before` did not, without what goes with a new object anyway
    (the rules of a new security group, the subnets of a new network)."""
    seen = {(o['kind'], o['id']) for o in before}
    new = [o for o in now if (o['kind'], o['id']) not in seen]
    parents = {o['id'] for o in new}
    return [o for o in new if o.get('group', o.get('network')) not in parents]


def carries(obj, tokens):
    """True when a token stands alone (not inside a longer word of letters and digits) in the
    object's name, description or a tag: `e2e42` matches kube_service_e2e42_shop_web, not
    kube_service_e2e421_shop_web."""
    for token in tokens:
        pattern = re.compile(r'(?<![A-Za-z0-9])%s(?![A-Za-z0-9])' % re.escape(token))
        if any(pattern.search(t) for t in obj['text']):
            return True
    return False


def describe(obj):
    return '%s %s %s' % (obj['kind'], obj['id'], obj['name'])


def wait_gone(get, obj_id, timeout, not_found):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            get(obj_id)
        except not_found:
            return True
        time.sleep(0.5)
    return False
