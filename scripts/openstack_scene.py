#!/usr/bin/python3
"""Set the scene for tests against the real OpenStack of scripts/openstack-up.sh.

Creates, stops, starts and deletes servers, ports and floating IPs through the real APIs
(openstacksdk) and prints one JSON object on stdout per call. Controller tests shell out to it.

  openstack_scene.py server-create --name N [--flavor F] [--image I] [--network NET]
                                   [--fixed-ip IP] [--port PORT] [--az AZ] [--wait-active]
  openstack_scene.py server-show ID
  openstack_scene.py server-stop ID [--wait]       (SHUTOFF)
  openstack_scene.py server-start ID [--wait]      (ACTIVE)
  openstack_scene.py server-delete ID [--wait] [--missing-ok]
                                                    (--wait: until GET answers 404, deleting
                                                    again when Nova lost the delete)
  openstack_scene.py port-create --network NET [--fixed-ip IP] [--name N]
  openstack_scene.py port-delete ID
  openstack_scene.py floating-ip-create --port ID [--network EXT] [--wait-server ID]
  openstack_scene.py floating-ip-delete ID
  openstack_scene.py made-lb-create --by upstream|upstream-untagged|in-tree --namespace NS
                     --service NAME [--cluster C] [--uid UID] [--port PORT:NODEPORT]...
                     [--member IP]... [--floating-ip] [--security-group [--member-port ID]...]
  openstack_scene.py sweep [--ledger FILE] [--match TOKEN]... [--routes-in CIDR]...

With $CCM_SCENE_LEDGER set, every object a command creates is recorded there; `sweep` deletes
what a ledger records and what carries a token (as a word of its name, description or a tag:
a test's cluster name is in everything its CCM makes), load balancers first (cascade), then
floating IPs, servers, ports (and router routes through them or inside a --routes-in CIDR),
security groups, networks,
regions and RBAC policies, and prints what it deleted.

The cloud is --cloud, else $OS_CLOUD, else the env file's OPENSTACK_CLOUD_PASSWORD; clouds.yaml
is $OS_CLIENT_CONFIG_FILE, else the env file's. The env file (--env, else $CCM_OPENSTACK_ENV,
else target/openstack/env) also gives the defaults: flavor, image, internal network, external
network. Exit codes: 0 done, 1 error (message on stderr), 2 usage, 3 not found (server-show).
Server JSON: id, name, status, vm_state, task_state, power_state, availability_zone, flavor (name),
image_id, project_id, addresses (Nova's), fixed_ips, floating_ips, ports (Neutron's, with
fixed_ips); compute_host and hypervisor_hostname are null unless the cloud is admin (Nova policy).
"""
import argparse
import ipaddress
import json
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'openstack'))
import envfile  # noqa: E402  (scripts/openstack/envfile.py)
import leftovers  # noqa: E402  (scripts/openstack/leftovers.py)

# The ledger of a test's guard (testkit's `Sweep`): every object a command creates is appended
# to it (one JSON line), and `sweep --ledger` deletes what is still there.
LEDGER = 'CCM_SCENE_LEDGER'


class NotFound(Exception):
    pass


# A build takes 3-7 s on the test stack; one still in BUILD after this long has lost its
# scheduling and is booted again.
BUILD_STALL = 90


class BuildFailed(Exception):
    pass


def fail(msg):
    print('openstack_scene: error: %s' % msg, file=sys.stderr)
    sys.exit(1)


class Scene:
    def __init__(self, args):
        import openstack  # late: --help works without openstacksdk
        self.openstack = openstack
        env_file = envfile.path(args.env)
        self.env_file = env_file
        self.env = envfile.read(env_file)
        if not os.environ.get('OS_CLIENT_CONFIG_FILE') and self.env.get('OPENSTACK_CLOUDS_YAML'):
            os.environ['OS_CLIENT_CONFIG_FILE'] = self.env['OPENSTACK_CLOUDS_YAML']
        cloud = args.cloud or os.environ.get('OS_CLOUD') or self.env.get('OPENSTACK_CLOUD_PASSWORD')
        if not cloud:
            fail('no cloud: pass --cloud, set OS_CLOUD, or point CCM_OPENSTACK_ENV at the env '
                 'file of scripts/openstack-up.sh (not found: %s)' % env_file)
        self.conn = openstack.connect(cloud=cloud)
        self.timeout = args.timeout

    def default(self, value, key, what):
        value = value or self.env.get(key)
        if not value:
            fail('no %s: pass it, or set %s in the env file' % (what, key))
        return value

    # Nova and Neutron on SQLite answer 500 now and then ('database is locked'): repeat an
    # idempotent call once. Creates are repeated only after checking that nothing was created.
    def retry(self, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except self.openstack.exceptions.HttpException as e:
            if e.status_code is None or e.status_code < 500:
                raise
            print('openstack_scene: %s; retrying once' % e, file=sys.stderr)
            time.sleep(1)
            return fn(*args, **kwargs)

    # A delete that answered 500 may still have happened: a repeat that finds nothing means the
    # first one did its work. A first answer of 404 stays an error (there was nothing to delete).
    def delete_once(self, fn, obj_id):
        try:
            return fn(obj_id, ignore_missing=False)
        except self.openstack.exceptions.HttpException as e:
            if e.status_code is None or e.status_code < 500:
                raise
            print('openstack_scene: %s; retrying once' % e, file=sys.stderr)
            time.sleep(1)
        try:
            return fn(obj_id, ignore_missing=False)
        except self.openstack.exceptions.NotFoundException:
            print('openstack_scene: %s is gone: the first delete did it' % obj_id, file=sys.stderr)
            return None

    def record(self, kind, obj_id, name=''):
        ledger = os.environ.get(LEDGER)
        if ledger:
            with open(ledger, 'a') as f:
                f.write(json.dumps({'kind': kind, 'id': obj_id, 'name': name}) + '\n')

    def create_once(self, create, find, **attrs):
        try:
            return create(**attrs)
        except self.openstack.exceptions.HttpException as e:
            if e.status_code is None or e.status_code < 500:
                raise
            print('openstack_scene: %s; retrying once' % e, file=sys.stderr)
            time.sleep(1)
            found = find()
            return found if found is not None else create(**attrs)

    # ------------------------------------------------------------------------- lookups
    def network(self, name_or_id):
        net = self.retry(self.conn.network.find_network, name_or_id, ignore_missing=True)
        if net is None:
            fail('network %r not found' % name_or_id)
        return net

    def server(self, server_id):
        try:
            return self.retry(self.conn.compute.get_server, server_id)
        except self.openstack.exceptions.NotFoundException:
            raise NotFound(server_id)

    def wait_status(self, server_id, status, stall=None):
        """Waits until the server is in `status`. ERROR raises BuildFailed; so does a server
        still in BUILD after `stall` seconds (a build whose scheduling was lost)."""
        started = time.time()
        deadline = started + self.timeout
        while True:
            server = self.server(server_id)
            if server.status == status:
                return server
            if server.status == 'ERROR':
                raise BuildFailed('server %s is in ERROR: %s' % (
                    server_id, getattr(server, 'fault', None)))
            if stall is not None and server.status == 'BUILD' and time.time() > started + stall:
                raise BuildFailed('server %s still in BUILD after %ss' % (server_id, stall))
            if time.time() > deadline:
                fail('server %s is %s, not %s, after %ss' % (
                    server_id, server.status, status, self.timeout))
            time.sleep(0.5)

    def wait_fixed_address(self, server_id):
        """Waits until Nova lists a fixed address of an ACTIVE server. Nova allocates the
        network beside the spawn, and the stack's fake virt driver does not wait for it, so now
        and then the server is ACTIVE before the port is in Nova's network info cache (CI saw
        `addresses: {}` right after ACTIVE). Tests take the server's address from this answer."""
        deadline = time.time() + self.timeout
        while True:
            server = self.server(server_id)
            if any(a.get('OS-EXT-IPS:type') == 'fixed'
                   for net in (server.addresses or {}).values() for a in net):
                return server
            if time.time() > deadline:
                fail('server %s is ACTIVE with no fixed address after %ss (addresses %s)' % (
                    server_id, self.timeout, server.addresses))
            time.sleep(0.5)

    def delete_until_gone(self, server_id):
        """Waits until GET on a server being deleted answers 404. Nova on SQLite loses a delete
        now and then (the server stays ACTIVE, or in ERROR / task 'deleting' after 'database
        is locked'): while the server is still there, the delete is issued again every 20 s,
        after an admin's reset-state when it is in ERROR or the delete is refused (409)."""
        deadline = time.time() + self.timeout
        reissued = time.time()
        while True:
            try:
                server = self.server(server_id)
            except NotFound:
                return
            if time.time() > deadline:
                fail('server %s still exists (%s, task %s) after %ss' % (
                    server_id, server.status, server.task_state, self.timeout))
            if time.time() > reissued + 20:
                reissued = time.time()
                print('openstack_scene: server %s still %s (task %s); deleting it again' % (
                    server_id, server.status, server.task_state), file=sys.stderr)
                self.delete_again(server)
            time.sleep(0.5)

    def delete_again(self, server):
        def reset():
            self.admin().compute.reset_server_state(server.id, 'error')
        try:
            if server.status == 'ERROR':
                reset()
            self.retry(self.conn.compute.delete_server, server.id)
        except self.openstack.exceptions.ConflictException:
            reset()
            self.retry(self.conn.compute.delete_server, server.id)
        except self.openstack.exceptions.NotFoundException:
            pass

    # --------------------------------------------------------------------------- views
    def server_json(self, s):
        addresses = s.addresses or {}
        ports = self.retry(lambda: list(self.conn.network.ports(device_id=s.id)))
        flavor = s.flavor or {}
        return {
            'id': s.id,
            'name': s.name,
            'status': s.status,
            'vm_state': s.vm_state,
            'task_state': s.task_state,
            'power_state': s.power_state,
            'availability_zone': s.availability_zone,
            'compute_host': s.compute_host,
            'hypervisor_hostname': s.hypervisor_hostname,
            'flavor': flavor.get('original_name') or flavor.get('name') or flavor.get('id'),
            'image_id': (s.image or {}).get('id'),
            'project_id': s.project_id,
            'addresses': addresses,
            'fixed_ips': [a['addr'] for net in addresses.values() for a in net
                          if a.get('OS-EXT-IPS:type') == 'fixed'],
            'floating_ips': [a['addr'] for net in addresses.values() for a in net
                             if a.get('OS-EXT-IPS:type') == 'floating'],
            'ports': [port_json(p) for p in ports],
        }

    # ------------------------------------------------------------------------ commands
    def server_create(self, a):
        flavor = self.retry(self.conn.compute.find_flavor,
                            self.default(a.flavor, 'OPENSTACK_FLAVOR', 'flavor'),
                            ignore_missing=False)
        image = self.retry(self.conn.image.find_image,
                           self.default(a.image, 'OPENSTACK_IMAGE', 'image'), ignore_missing=False)
        if a.port:
            nics = [{'port': port} for port in a.port]
        else:
            net = self.network(self.default(a.network, 'OPENSTACK_INTERNAL_NETWORK', 'network'))
            nics = [{'uuid': net.id}]
            if a.fixed_ip:
                nics[0]['fixed_ip'] = a.fixed_ip
        attrs = {'name': a.name, 'flavor_id': flavor.id, 'image_id': image.id, 'networks': nics}
        if a.az:
            attrs['availability_zone'] = a.az
        # Nova on SQLite fails a build now and then ('database is locked' in the conductor: the
        # server goes to ERROR, or stays in BUILD for ever). Such a server is deleted and built
        # again, twice at most; only the last attempt waits the full --timeout.
        attempts = 3
        for attempt in range(1, attempts + 1):
            server = self.create_once(
                self.conn.compute.create_server,
                lambda: next(iter(self.conn.compute.servers(name='^%s$' % a.name)), None), **attrs)
            self.record('server', server.id, a.name)
            if not a.wait_active:
                break
            try:
                stall = None if attempt == attempts else min(self.timeout, BUILD_STALL)
                self.wait_status(server.id, 'ACTIVE', stall=stall)
                self.wait_fixed_address(server.id)
                break
            except BuildFailed as e:
                if attempt == attempts:
                    fail(str(e))
                print('openstack_scene: %s; deleting it and booting again' % e, file=sys.stderr)
                self.retry(self.conn.compute.delete_server, server.id)
                self.delete_until_gone(server.id)
        return self.server_json(self.server(server.id))

    def server_show(self, a):
        try:
            return self.server_json(self.server(a.id))
        except NotFound:
            print(json.dumps({'id': a.id, 'error': 'not found'}))
            sys.exit(3)

    def server_action(self, a, action, status):
        self.retry(action, a.id)
        if a.wait:
            self.wait_status(a.id, status)
        return self.server_json(self.server(a.id))

    def server_delete(self, a):
        try:
            self.delete_once(self.conn.compute.delete_server, a.id)
        except self.openstack.exceptions.NotFoundException:
            if a.missing_ok:
                return {'id': a.id, 'deleted': False}
            fail('server %s not found' % a.id)
        if a.wait:
            self.delete_until_gone(a.id)
        return {'id': a.id, 'deleted': True}

    def port_create(self, a):
        net = self.network(self.default(a.network, 'OPENSTACK_INTERNAL_NETWORK', 'network'))
        name = a.name or 'scene-port-%s' % uuid.uuid4().hex[:8]
        attrs = {'network_id': net.id, 'name': name}
        if a.fixed_ip:
            attrs['fixed_ips'] = [{'ip_address': a.fixed_ip}]
        if a.no_port_security:
            attrs.update(port_security_enabled=False, security_groups=[])
        if a.device_id:
            attrs['device_id'] = a.device_id
        port = self.create_once(
            self.conn.network.create_port,
            lambda: next(iter(self.conn.network.ports(name=name, network_id=net.id)), None),
            **attrs)
        self.record('port', port.id, name)
        return port_json(port)

    def network_create(self, a):
        """A network with one IPv4 subnet and no router (idempotent): its range may overlap
        another network's, as two tenants' or two clusters' networks do."""
        net = self.retry(self.conn.network.find_network, a.name, ignore_missing=True)
        if net is None:
            net = self.conn.network.create_network(name=a.name)
            self.record('network', net.id, a.name)
        name = '%s-v4' % a.name
        sub = next(iter(self.conn.network.subnets(name=name, network_id=net.id)), None)
        if sub is None:
            sub = self.conn.network.create_subnet(
                network_id=net.id, name=name, ip_version=4, cidr=a.cidr, enable_dhcp=False,
                gateway_ip=None)
        return {'id': net.id, 'name': net.name, 'subnet': sub.id}

    def dual_stack_network_create(self, a):
        """A network with an IPv4 and an IPv6 subnet, both on the stack's router (idempotent):
        ports on it hold one address of each family, and routes through either are valid."""
        router = self.default(a.router, 'OPENSTACK_ROUTER_ID', 'router')
        net = self.retry(self.conn.network.find_network, a.name, ignore_missing=True)
        if net is None:
            net = self.conn.network.create_network(name=a.name)
            self.record('network', net.id, a.name)
        subnets = {}
        for version, cidr in ((4, a.cidr4), (6, a.cidr6)):
            name = '%s-v%d' % (a.name, version)
            sub = next(iter(self.conn.network.subnets(name=name, network_id=net.id)), None)
            if sub is None:
                sub = self.conn.network.create_subnet(
                    network_id=net.id, name=name, ip_version=version, cidr=cidr,
                    enable_dhcp=False, gateway_ip=str(ipaddress.ip_network(cidr)[1]))
            ports = self.conn.network.ports(device_id=router, network_id=net.id)
            if not any(ip['subnet_id'] == sub.id for p in ports for ip in p.fixed_ips):
                self.retry(self.conn.network.add_interface_to_router, router, subnet_id=sub.id)
            subnets['v%d' % version] = sub.id
        return {'id': net.id, 'name': net.name, 'subnets': subnets}

    def dual_stack_network_delete(self, a):
        """Its router interfaces, its ports, then the network (missing: nothing to do)."""
        router = self.default(a.router, 'OPENSTACK_ROUTER_ID', 'router')
        net = self.retry(self.conn.network.find_network, a.name, ignore_missing=True)
        if net is None:
            return {'name': a.name, 'deleted': False}
        for sub in self.conn.network.subnets(network_id=net.id):
            try:
                self.conn.network.remove_interface_from_router(router, subnet_id=sub.id)
            except self.openstack.exceptions.NotFoundException:
                pass
        for port in self.conn.network.ports(network_id=net.id):
            self.retry(self.conn.network.delete_port, port.id, ignore_missing=True)
        self.retry(self.conn.network.delete_network, net.id, ignore_missing=True)
        return {'name': a.name, 'deleted': True}

    def port_show(self, a):
        return port_json(self.conn.network.get_port(a.id))

    def port_delete(self, a):
        self.delete_once(self.conn.network.delete_port, a.id)
        return {'id': a.id, 'deleted': True}

    def floating_ip_create(self, a):
        net = self.network(self.default(a.network, 'OPENSTACK_EXTERNAL_NETWORK',
                                        'external network'))
        fip = self.create_once(
            self.conn.network.create_ip,
            lambda: next(iter(self.conn.network.ips(port_id=a.port)), None) if a.port else None,
            floating_network_id=net.id, port_id=a.port)
        self.record('floating-ip', fip.id, fip.floating_ip_address)
        if a.wait_server:
            # nova learns of it through neutron's network-changed event (seconds), else its heal
            deadline = time.time() + self.timeout
            while fip.floating_ip_address not in self.server_json(
                    self.server(a.wait_server))['floating_ips']:
                if time.time() > deadline:
                    fail('floating IP %s not in the addresses of server %s after %ss' % (
                        fip.floating_ip_address, a.wait_server, self.timeout))
                time.sleep(1)
        return fip_json(fip)

    def floating_ip_delete(self, a):
        self.delete_once(self.conn.network.delete_ip, a.id)
        return {'id': a.id, 'deleted': True}

    def floating_ip_list(self, _a):
        return [fip_json(f) for f in self.conn.network.ips()]

    def security_group_list(self, a):
        """Security groups (by exact name) with their rules."""
        query = {'name': a.name} if a.name else {}
        return [{
            'id': g.id, 'name': g.name, 'tags': g.tags,
            'rules': [{k: r.get(k) for k in ('direction', 'ethertype', 'protocol',
                                             'port_range_min', 'port_range_max',
                                             'remote_ip_prefix', 'remote_group_id')}
                      for r in g.security_group_rules or []],
        } for g in self.conn.network.security_groups(**query)]


    def security_group_delete(self, a):
        self.delete_once(self.conn.network.delete_security_group, a.id)
        return {'id': a.id, 'deleted': True}

    def loadbalancer_create(self, a):
        """A bare load balancer (no listeners, no tags) on the internal subnet, waited ACTIVE:
        what a user makes by hand."""
        subnet = self.default(None, 'OPENSTACK_INTERNAL_SUBNET_ID', 'internal subnet')
        lbapi = self.conn.load_balancer
        lb = lbapi.create_load_balancer(name=a.name, vip_subnet_id=subnet)
        self.record('loadbalancer', lb.id, a.name)
        deadline = time.time() + self.timeout
        while lb.provisioning_status != 'ACTIVE':
            if lb.provisioning_status == 'ERROR' or time.time() > deadline:
                fail('load balancer %s is %s' % (lb.id, lb.provisioning_status))
            time.sleep(0.5)
            lb = lbapi.get_load_balancer(lb.id)
        return {'id': lb.id, 'name': lb.name, 'provisioning_status': lb.provisioning_status}

    def wait_lb_active(self, lb_id):
        lbapi = self.conn.load_balancer
        deadline = time.time() + self.timeout
        lb = lbapi.get_load_balancer(lb_id)
        while lb.provisioning_status != 'ACTIVE':
            if lb.provisioning_status == 'ERROR' or time.time() > deadline:
                fail('load balancer %s is %s' % (lb.id, lb.provisioning_status))
            time.sleep(0.5)
            lb = lbapi.get_load_balancer(lb_id)
        return lb

    def made_lb_create(self, a):
        """What another controller left for a Service, named, described and tagged exactly as
        it names, describes and tags them: `upstream` (cloud-provider-openstack's CCM on an
        Octavia with tags), `upstream-untagged` (the same on one without: descriptions only) or
        `in-tree` (the legacy provider: `a<uid32>`, no tags). A listener, pool and members per
        --port; with --floating-ip a floating IP on the VIP (described as upstream describes it;
        the in-tree provider gave none), with --security-group the Service's group in the
        maker's layout (made_security_group), --member-port naming the members' ports."""
        lbapi = self.conn.load_balancer
        subnet = self.default(None, 'OPENSTACK_INTERNAL_SUBNET_ID', 'internal subnet')
        ns, svc, cluster = a.namespace, a.service, a.cluster
        if a.by == 'in-tree':
            name = ('a' + a.uid.replace('-', ''))[:32]
            description = 'Kubernetes external service %s' % name
            child = lambda kind, i: '%s_%s_%d' % (kind, name, i)  # noqa: E731
        else:
            name = 'kube_service_%s_%s_%s' % (cluster, ns, svc)
            description = 'Kubernetes external service %s/%s from cluster %s' % (ns, svc, cluster)
            child = lambda kind, i: '%s_%d_%s' % (kind, i, name)  # noqa: E731
        tags = [name] if a.by == 'upstream' else []
        lb = lbapi.create_load_balancer(name=name, description=description, tags=tags,
                                        vip_subnet_id=subnet)
        self.record('loadbalancer', lb.id, name)
        lb = self.wait_lb_active(lb.id)
        listeners = []
        for i, spec in enumerate(a.port):
            port, node_port = (int(x) for x in spec.split(':'))
            listener = lbapi.create_listener(name=child('listener', i), protocol='TCP',
                                             protocol_port=port, load_balancer_id=lb.id,
                                             tags=tags)
            self.wait_lb_active(lb.id)
            pool = lbapi.create_pool(name=child('pool', i), protocol='TCP',
                                     lb_algorithm='ROUND_ROBIN', listener_id=listener.id)
            self.wait_lb_active(lb.id)
            if a.member:
                # One batch call (the makers added members one at a time; the result is the same).
                members = [{'address': address, 'protocol_port': node_port, 'name': address,
                            'subnet_id': subnet} for address in a.member]
                response = lbapi.put('lbaas/pools/%s/members' % pool.id,
                                     json={'members': members})
                if response.status_code >= 400:
                    fail('batch member update of pool %s: %s %s' % (
                        pool.id, response.status_code, response.text))
                self.wait_lb_active(lb.id)
            listeners.append({'id': listener.id, 'protocol_port': port, 'pool_id': pool.id})
        out = {'id': lb.id, 'name': lb.name, 'vip_address': lb.vip_address,
               'vip_port_id': lb.vip_port_id, 'listeners': listeners}
        if a.floating_ip:
            net = self.network(self.default(None, 'OPENSTACK_EXTERNAL_NETWORK',
                                            'external network'))
            attrs = {'floating_network_id': net.id, 'port_id': lb.vip_port_id}
            if a.by != 'in-tree':
                attrs['description'] = ('Floating IP for Kubernetes external service %s/%s '
                                        'from cluster %s' % (ns, svc, cluster))
            fip = self.conn.network.create_ip(**attrs)
            self.record('floating-ip', fip.id, fip.floating_ip_address)
            out['floating_ip'] = fip_json(fip)
        if a.security_group:
            out.update(self.made_security_group(a, lb, subnet))
        return out

    def made_security_group(self, a, lb, subnet):
        """The Service's group `lb-sg-<uid>-<ns>-<name>` in the maker's layout. Upstream's: on
        the member ports, a rule per NodePort from the member subnet. The in-tree provider's: on
        the VIP port, a rule per Service port from everywhere and ICMP "fragmentation needed",
        and a group of the nodes (on the member ports) with a rule per NodePort whose remote
        group is the Service's."""
        net = self.conn.network
        group = net.create_security_group(
            name='lb-sg-%s-%s-%s' % (a.uid, a.namespace, a.service),
            description='Security Group for %s/%s Service LoadBalancer in cluster %s' % (
                a.namespace, a.service, a.cluster))
        self.record('security-group', group.id, group.name)
        ports = [tuple(int(x) for x in spec.split(':')) for spec in a.port]

        def rule(group_id, port, **kw):
            return net.create_security_group_rule(
                security_group_id=group_id, direction='ingress', ethertype='IPv4',
                protocol=kw.pop('protocol', 'tcp'), port_range_min=port, port_range_max=port,
                **kw)

        def add_group(port_id, group_id, network=net):
            port = network.get_port(port_id)
            network.update_port(port, security_groups=list(port.security_group_ids) + [group_id])

        out = {'security_group': group.id}
        if a.by == 'in-tree':
            for port, _ in ports:
                rule(group.id, port, remote_ip_prefix='0.0.0.0/0')
            net.create_security_group_rule(
                security_group_id=group.id, direction='ingress', ethertype='IPv4',
                protocol='icmp', port_range_min=3, port_range_max=4,
                remote_ip_prefix='0.0.0.0/0')
            # Octavia's own group on the VIP port belongs to its service project, which the
            # project cannot see (Neutron answers 404 to a change naming it): as admin.
            add_group(lb.vip_port_id, group.id, self.admin().network)
            nodes = net.create_security_group(name='k8s-nodes-%s' % a.uid[:8],
                                              description='the nodes of a test cluster')
            self.record('security-group', nodes.id, nodes.name)
            for _, node_port in ports:
                rule(nodes.id, node_port, remote_group_id=group.id)
            for port_id in a.member_port or []:
                add_group(port_id, nodes.id)
            out['node_group'] = nodes.id
        else:
            cidr = net.get_subnet(subnet).cidr
            for _, node_port in ports:
                rule(group.id, node_port, remote_ip_prefix=cidr)
            for port_id in a.member_port or []:
                add_group(port_id, group.id)
        return out

    def loadbalancer_break(self, a):
        """Marks a load balancer ERROR, as a failed amphora would leave it (or --status, e.g.
        PENDING_UPDATE as a slow amphora would, and ACTIVE again): the no-op drivers never fail
        and never dawdle, so the status is written into Octavia's database (the stack's SQLite
        file, beside the env file), with updated_at moved as Octavia moves it."""
        import sqlite3
        db = os.path.join(os.path.dirname(os.path.abspath(self.env_file)), 'octavia', 'octavia.db')
        if not os.path.exists(db):
            fail('no Octavia database at %s (a stack with OPENSTACK_OCTAVIA=0?)' % db)
        with sqlite3.connect(db, timeout=30) as conn:
            changed = conn.execute(
                "UPDATE load_balancer SET provisioning_status = ?, "
                "operating_status = ?, updated_at = datetime('now') WHERE id = ?",
                (a.status, 'ERROR' if a.status == 'ERROR' else 'ONLINE', a.id)).rowcount
            if a.lose_vip_port:
                # As a create Octavia reverted half-way leaves it: the VIP record names no port
                # Neutron has, so Octavia's delete leaves the real one (octavia-lb-<id>) behind,
                # without Octavia's own security group (made after the port; its delete would
                # find it in use).
                port = conn.execute("SELECT port_id FROM vip WHERE load_balancer_id = ?",
                                    (a.id,)).fetchone()
                conn.execute("UPDATE vip SET port_id = ? WHERE load_balancer_id = ?",
                             (str(uuid.uuid4()), a.id))
                if port and port[0]:
                    self.conn.network.update_port(port[0], security_groups=[])
        if changed != 1:
            fail('no load balancer %s in %s' % (a.id, db))
        lb = self.conn.load_balancer.get_load_balancer(a.id)
        return {'id': lb.id, 'provisioning_status': lb.provisioning_status}

    def member_delete(self, a):
        """Deletes a pool's member by address, as a user editing Octavia by hand would."""
        lbapi = self.conn.load_balancer
        member = next((m for m in lbapi.members(a.pool) if m.address == a.address), None)
        if member is None:
            fail('no member %s in pool %s' % (a.address, a.pool))
        lbapi.delete_member(member, a.pool)
        return {'id': member.id, 'deleted': True}

    def admin(self):
        return self.openstack.connect(cloud=self.default(None, 'OPENSTACK_CLOUD_ADMIN',
                                                         'admin cloud'))

    def network_share(self, a):
        """Shares a network with the project (as admin): its subnets become visible to the
        project's users, which Neutron otherwise hides on an external network."""
        net = self.network(a.network)
        project = self.conn.current_project_id
        policy = self.admin().network.create_rbac_policy(
            object_type='network', object_id=net.id, action='access_as_shared',
            target_project_id=project)
        self.record('rbac-policy', policy.id)
        return {'id': policy.id, 'network_id': net.id, 'project_id': project}

    def rbac_delete(self, a):
        self.admin().network.delete_rbac_policy(a.id, ignore_missing=False)
        return {'id': a.id, 'deleted': True}

    def region_create(self, a):
        """A region with RegionOne's endpoints, but Octavia's at --load-balancer (a test's
        proxy), and Neutron's at --network when given: a catalog through which a test can take
        Octavia away and bring it back, or stop a controller right after a given call."""
        idn = self.admin().identity
        source = self.default(None, 'OPENSTACK_REGION', 'region')
        if not any(r.id == a.name for r in idn.regions()):
            idn.create_region(id=a.name, description='a test region (openstack_scene.py)')
            self.record('region', a.name, a.name)
        have = {(e.service_id, e.interface) for e in idn.endpoints(region_id=a.name)}
        fronts = {s.id: a.load_balancer for s in idn.services(type='load-balancer')}
        if a.network:
            fronts.update({s.id: a.network for s in idn.services(type='network')})
        for e in idn.endpoints(region_id=source):
            url = fronts.get(e.service_id, e.url)
            if (e.service_id, e.interface) not in have:
                idn.create_endpoint(service_id=e.service_id, interface=e.interface, url=url,
                                    region_id=a.name)
        return {'region': a.name}

    def region_delete(self, a):
        idn = self.admin().identity
        for e in idn.endpoints(region_id=a.name):
            idn.delete_endpoint(e)
        idn.delete_region(a.name, ignore_missing=True)
        return {'region': a.name, 'deleted': True}

    def sweep(self, a):
        """Deletes what the ledger records and what carries one of the tokens (see the module's
        help), in dependency order; prints {deleted: [...], failed: [...]}."""
        recorded = set()
        if a.ledger and os.path.exists(a.ledger):
            with open(a.ledger) as f:
                recorded = {(e['kind'], e['id']) for e in map(json.loads, f) if e}
        tokens = [t for t in a.match if t]
        if any(len(t) < 4 for t in tokens):
            fail('a token shorter than 4 characters would match too much: %r' % tokens)
        everything = leftovers.inventory(self.conn, self.admin())
        targets = [o for o in everything if o['kind'] in leftovers.ORDER and (
            (o['kind'], o['id']) in recorded or leftovers.carries(o, tokens))]
        # Being deleted already: not left behind.
        targets = [o for o in targets if o.get('status') not in ('PENDING_DELETE', 'DELETED')]
        # The router routes through a swept server's or port's addresses go first.
        swept = {o['id'] for o in targets}
        hops = {ip for o in everything if o['kind'] == 'port'
                and (o['id'] in swept or o['device'] in swept) for ip in o['ips']}
        cidrs = [ipaddress.ip_network(c, strict=False) for c in a.routes_in]
        targets += [o for o in everything if o['kind'] == 'router-route' and (
            o['name'].split(' via ')[1] in hops or within(o['name'].split(' via ')[0], cidrs))]
        done, failed = [], []
        for kind in ['router-route'] + leftovers.ORDER:
            for o in (o for o in targets if o['kind'] == kind):
                try:
                    self.sweep_one(o)
                    done.append(leftovers.describe(o))
                except self.openstack.exceptions.NotFoundException:
                    pass
                except (self.openstack.exceptions.SDKException, SystemExit) as e:
                    failed.append('%s: %s' % (leftovers.describe(o), e))
        return {'deleted': done, 'failed': failed}

    def sweep_one(self, o):
        net, kind, oid = self.conn.network, o['kind'], o['id']
        gone = self.openstack.exceptions.NotFoundException
        if kind == 'router-route':
            router, route = o['router'], o['name'].split(' via ')
            net.remove_extra_routes_from_router(
                router, body={'router': {'routes': [{'destination': route[0],
                                                     'nexthop': route[1]}]}})
        elif kind == 'loadbalancer':
            lbapi = self.conn.load_balancer
            lbapi.delete_load_balancer(oid, cascade=True, ignore_missing=False)
            if not leftovers.wait_gone(lbapi.get_load_balancer, oid, self.timeout, gone):
                fail('load balancer %s still there after %ss' % (oid, self.timeout))
        elif kind == 'floating-ip':
            self.delete_once(net.delete_ip, oid)
        elif kind == 'server':
            self.delete_once(self.conn.compute.delete_server, oid)
            self.delete_until_gone(oid)
        elif kind == 'port':
            self.delete_once(net.delete_port, oid)
        elif kind == 'security-group':
            try:
                self.delete_once(net.delete_security_group, oid)
            except self.openstack.exceptions.ConflictException:
                # Still on a port the test did not make: taken off it, then deleted.
                for port in net.ports():
                    if oid in (port.security_group_ids or []):
                        net.update_port(port, security_groups=[
                            g for g in port.security_group_ids if g != oid])
                self.delete_once(net.delete_security_group, oid)
        elif kind == 'network':
            for sub in net.subnets(network_id=oid):
                for router in net.routers():
                    try:
                        net.remove_interface_from_router(router, subnet_id=sub.id)
                    except (gone, self.openstack.exceptions.BadRequestException):
                        pass
            for port in net.ports(network_id=oid):
                self.retry(net.delete_port, port.id, ignore_missing=True)
            self.delete_once(net.delete_network, oid)
        elif kind == 'region':
            self.region_delete(argparse.Namespace(name=oid))
        elif kind == 'rbac-policy':
            self.admin().network.delete_rbac_policy(oid, ignore_missing=False)

    def loadbalancer_delete(self, a):
        self.conn.load_balancer.delete_load_balancer(a.id, cascade=True, ignore_missing=False)
        return {'id': a.id, 'deleted': True}

    def existing(self, get, refs):
        """The objects `refs` name that still exist (one may be deleted while we read)."""
        out = []
        for ref in refs or []:
            try:
                out.append(get(ref['id']))
            except self.openstack.exceptions.NotFoundException:
                pass
        return out

    def members(self, pool_id):
        """A pool's members, none if the pool went away while we read."""
        try:
            return list(self.conn.load_balancer.members(pool_id))
        except self.openstack.exceptions.NotFoundException:
            return []

    def loadbalancer_list(self, a):
        """Load balancers of the project (by exact name), each with its listeners, pools and
        members, as the Octavia API has them."""
        out = []
        for lb in self.conn.load_balancer.load_balancers(name=a.name) if a.name else \
                self.conn.load_balancer.load_balancers():
            lbapi = self.conn.load_balancer
            listeners = self.existing(lbapi.get_listener, lb.listeners)
            pools = self.existing(lbapi.get_pool, lb.pools)
            out.append({
                'id': lb.id, 'name': lb.name, 'tags': lb.tags, 'description': lb.description,
                'provisioning_status': lb.provisioning_status,
                'operating_status': lb.operating_status, 'vip_address': lb.vip_address,
                'vip_subnet_id': lb.vip_subnet_id,
                'listeners': [{'protocol': x.protocol, 'protocol_port': x.protocol_port,
                               'allowed_cidrs': x.allowed_cidrs} for x in listeners],
                'listener_details': [{'id': x.id, 'name': x.name, 'tags': x.tags,
                                      'protocol_port': x.protocol_port} for x in listeners],
                'pools': [{'id': x.id, 'name': x.name, 'lb_algorithm': x.lb_algorithm,
                           'members': sorted('%s:%s' % (m.address, m.protocol_port)
                                             for m in members),
                           'member_details': sorted(
                               ({'id': m.id, 'address': m.address,
                                 'protocol_port': m.protocol_port, 'subnet_id': m.subnet_id}
                                for m in members),
                               key=lambda m: (m['address'], m['protocol_port']))}
                          for x in pools for members in [list(self.members(x.id))]],
            })
        return out


def within(destination, cidrs):
    net = ipaddress.ip_network(destination, strict=False)
    return any(net.version == c.version and net.subnet_of(c) for c in cidrs)


def port_json(p):
    return {
        'id': p.id,
        'name': p.name,
        'network_id': p.network_id,
        'device_id': p.device_id,
        'mac_address': p.mac_address,
        'status': p.status,
        'security_groups': p.security_group_ids or [],
        'port_security_enabled': p.is_port_security_enabled,
        'fixed_ips': [{'subnet_id': f.get('subnet_id'), 'ip_address': f.get('ip_address')}
                      for f in p.fixed_ips or []],
    }


def fip_json(f):
    return {
        'id': f.id,
        'floating_ip_address': f.floating_ip_address,
        'floating_network_id': f.floating_network_id,
        'port_id': f.port_id,
        'fixed_ip_address': f.fixed_ip_address,
        'description': f.description,
        'tags': f.tags,
    }


def parse(argv):
    p = argparse.ArgumentParser(prog='openstack_scene.py', description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--cloud', help='cloud in clouds.yaml [env: OS_CLOUD]')
    p.add_argument('--env', help='env file of openstack-up.sh [env: CCM_OPENSTACK_ENV]')
    p.add_argument('--timeout', type=float, default=180, help='seconds per wait (180)')
    sub = p.add_subparsers(dest='cmd', required=True, metavar='COMMAND')

    s = sub.add_parser('server-create', help='boot a server')
    s.add_argument('--name', required=True)
    s.add_argument('--flavor', help='name or ID (OPENSTACK_FLAVOR)')
    s.add_argument('--image', help='name or ID (OPENSTACK_IMAGE)')
    s.add_argument('--network', help='name or ID (OPENSTACK_INTERNAL_NETWORK)')
    s.add_argument('--fixed-ip', help='fixed IP on --network')
    s.add_argument('--port', action='append', default=[],
                   help='boot on this existing port instead of --network (again: one NIC each)')
    s.add_argument('--az', help='availability zone')
    s.add_argument('--wait-active', action='store_true', help='wait for ACTIVE and a fixed address')
    for name, what in (('server-show', 'print a server'), ('server-stop', 'stop (SHUTOFF)'),
                       ('server-start', 'start (ACTIVE)'), ('server-delete', 'delete')):
        s = sub.add_parser(name, help=what)
        s.add_argument('id')
        if name != 'server-show':
            s.add_argument('--wait', action='store_true', help='wait for the new state')
        if name == 'server-delete':
            s.add_argument('--missing-ok', action='store_true',
                           help='a server already gone is no error (for cleanups)')
    s = sub.add_parser('port-create', help='create a port')
    s.add_argument('--network', help='name or ID (OPENSTACK_INTERNAL_NETWORK)')
    s.add_argument('--fixed-ip')
    s.add_argument('--name')
    s.add_argument('--no-port-security', action='store_true',
                   help='port security off (no security groups, no address pairs)')
    s.add_argument('--device-id', help="bound to this server ID (a node's providerID)")
    s = sub.add_parser('network-create', help='a network with one IPv4 subnet, no router')
    s.add_argument('--name', required=True)
    s.add_argument('--cidr', required=True, help='may overlap another network')
    s = sub.add_parser('network-delete', help='its ports, then the network (missing: nothing)')
    s.add_argument('--name', required=True)
    s.add_argument('--router', help='ID (OPENSTACK_ROUTER_ID)')
    for name, what in (('dual-stack-network-create',
                        'a network with an IPv4 and an IPv6 subnet on the router'),
                       ('dual-stack-network-delete',
                        'its router interfaces, ports and the network itself')):
        s = sub.add_parser(name, help=what)
        s.add_argument('--name', required=True)
        s.add_argument('--router', help='ID (OPENSTACK_ROUTER_ID)')
        if name.endswith('create'):
            s.add_argument('--cidr4', required=True)
            s.add_argument('--cidr6', required=True)
    s = sub.add_parser('port-show', help='print a port (with its security groups)')
    s.add_argument('id')
    s = sub.add_parser('port-delete', help='delete a port')
    s.add_argument('id')
    s = sub.add_parser('floating-ip-create', help='create a floating IP (on a port)')
    s.add_argument('--port', help='attach it to this port (default: unattached)')
    s.add_argument('--network', help='external network (OPENSTACK_EXTERNAL_NETWORK)')
    s.add_argument('--wait-server', metavar='ID',
                   help='wait until the server shows the floating IP in its addresses')
    s = sub.add_parser('floating-ip-delete', help='delete a floating IP')
    s.add_argument('id')
    sub.add_parser('floating-ip-list', help="the project's floating IPs")
    s = sub.add_parser('security-group-list', help='security groups with their rules')
    s.add_argument('--name', help='exact name')
    s = sub.add_parser('loadbalancer-create', help='a bare load balancer, as a user makes one')
    s.add_argument('--name', required=True)
    s = sub.add_parser('security-group-delete', help='delete a security group')
    s.add_argument('id')
    s = sub.add_parser('made-lb-create',
                       help="what another controller left for a Service (upstream's CCM, the "
                            "in-tree provider)")
    s.add_argument('--by', required=True, choices=['upstream', 'upstream-untagged', 'in-tree'])
    s.add_argument('--cluster', default='kubernetes', help='the cluster name it ran with')
    s.add_argument('--namespace', required=True)
    s.add_argument('--service', required=True)
    s.add_argument('--uid', default='', help="the Service's UID (in-tree name, group name)")
    s.add_argument('--port', action='append', default=[], metavar='PORT:NODEPORT')
    s.add_argument('--member', action='append', default=[], metavar='ADDRESS')
    s.add_argument('--floating-ip', action='store_true', help='a floating IP on the VIP')
    s.add_argument('--security-group', action='store_true',
                   help="the Service's group, in the maker's layout")
    s.add_argument('--member-port', action='append', metavar='PORT_ID',
                   help='a port the security group goes on')
    s = sub.add_parser('loadbalancer-delete', help='delete a load balancer (cascade)')
    s.add_argument('id')
    s = sub.add_parser('loadbalancer-break',
                       help="mark a load balancer ERROR in Octavia's database")
    s.add_argument('id')
    s.add_argument('--status', default='ERROR',
                   help='provisioning status to write (ERROR; PENDING_UPDATE, ACTIVE)')
    s.add_argument('--lose-vip-port', action='store_true',
                   help="also make Octavia lose track of its VIP port (its delete leaves it)")
    s = sub.add_parser('member-delete', help="delete a pool's member by address")
    s.add_argument('--pool', required=True)
    s.add_argument('--address', required=True)
    s = sub.add_parser('network-share', help='share a network with the project (as admin)')
    s.add_argument('--network', required=True, help='name or ID')
    s = sub.add_parser('rbac-delete', help='delete an RBAC policy (as admin)')
    s.add_argument('id')
    s = sub.add_parser('region-create',
                       help="a region with the stack's endpoints but Octavia's at --load-balancer "
                            "(and Neutron's at --network)")
    s.add_argument('--name', required=True)
    s.add_argument('--load-balancer', required=True, metavar='URL')
    s.add_argument('--network', metavar='URL', help="Neutron's endpoint in the region")
    s = sub.add_parser('region-delete', help='delete a region and its endpoints')
    s.add_argument('--name', required=True)
    s = sub.add_parser('loadbalancer-list', help='Octavia load balancers with their trees')
    s.add_argument('--name', help='exact name')
    s = sub.add_parser('sweep', help='delete what a ledger records or a token marks')
    s.add_argument('--ledger', help='the ledger file ($CCM_SCENE_LEDGER of the test)')
    s.add_argument('--match', action='append', default=[], metavar='TOKEN',
                   help='delete what carries TOKEN as a word of its name, description or tags')
    s.add_argument('--routes-in', action='append', default=[], metavar='CIDR',
                   help="remove the router's extra routes to destinations inside CIDR")
    return p.parse_args(argv)


def main(argv=None):
    a = parse(argv)
    scene = Scene(a)
    c = scene.conn.compute
    commands = {
        'server-create': scene.server_create,
        'server-show': scene.server_show,
        'server-stop': lambda a: scene.server_action(a, c.stop_server, 'SHUTOFF'),
        'server-start': lambda a: scene.server_action(a, c.start_server, 'ACTIVE'),
        'server-delete': scene.server_delete,
        'port-create': scene.port_create,
        'port-show': scene.port_show,
        'network-create': scene.network_create,
        'network-delete': scene.dual_stack_network_delete,
        'dual-stack-network-create': scene.dual_stack_network_create,
        'dual-stack-network-delete': scene.dual_stack_network_delete,
        'port-delete': scene.port_delete,
        'floating-ip-create': scene.floating_ip_create,
        'floating-ip-delete': scene.floating_ip_delete,
        'floating-ip-list': scene.floating_ip_list,
        'security-group-list': scene.security_group_list,
        'security-group-delete': scene.security_group_delete,
        'loadbalancer-create': scene.loadbalancer_create,
        'made-lb-create': scene.made_lb_create,
        'loadbalancer-delete': scene.loadbalancer_delete,
        'loadbalancer-list': scene.loadbalancer_list,
        'member-delete': scene.member_delete,
        'loadbalancer-break': scene.loadbalancer_break,
        'network-share': scene.network_share,
        'rbac-delete': scene.rbac_delete,
        'region-create': scene.region_create,
        'region-delete': scene.region_delete,
        'sweep': scene.sweep,
    }
    try:
        result = commands[a.cmd](a)
    except NotFound as e:
        fail('server %s not found' % e)
    except scene.openstack.exceptions.SDKException as e:
        fail(str(e))
    print(json.dumps(result, sort_keys=True))


if __name__ == '__main__':
    main()
