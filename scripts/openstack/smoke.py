#!/usr/bin/python3
"""Smoke test of the stack that scripts/openstack-up.sh started: it proves what the tests rely on.

  scripts/openstack/smoke.py [ENV_FILE]     (default: $CCM_OPENSTACK_ENV, else target/openstack/env)

Keystone: a token for every cloud in clouds.yaml (password by names and by IDs, application
credential by ID and by name), 401 for a wrong password (raw HTTP and through clouds.yaml).
Catalog: compute, network, image present, load-balancer absent. TLS front: cloud ccm-tls on HTTPS
endpoints, refused without the stack CA, links rewritten to HTTPS. Neutron: the external network's
name resolves to its ID. Nova through scripts/openstack_scene.py: a server becomes ACTIVE with a
fixed IP in the internal network, in the availability zone, on the compute host; a port with a
chosen fixed IP; a floating IP that nova reports; stop → SHUTOFF; start → ACTIVE; delete → 404.
Any failure exits 1 with the tails of the service logs. Nothing is skipped.
"""
import json
import os
import subprocess
import sys
import time
import uuid

import openstack
import requests
from keystoneauth1 import exceptions as ka_exceptions

import envfile



class Failed(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failed(msg)


class Smoke:
    def __init__(self, env_file):
        self.env_file = env_file
        self.env = envfile.read(env_file)
        os.environ['OS_CLIENT_CONFIG_FILE'] = self.env['OPENSTACK_CLOUDS_YAML']
        os.environ.pop('OS_CLOUD', None)
        self.checks = 0
        self.t0 = time.time()

    def ok(self, msg):
        self.checks += 1
        print('[smoke +%5.1fs] ok: %s' % (time.time() - self.t0, msg), flush=True)

    def scene(self, *args, expect_rc=0):
        cmd = [self.env['OPENSTACK_SCENE'], '--env', self.env_file, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode != expect_rc:
            raise Failed('%s exited %d (expected %d)\nstdout: %s\nstderr: %s' % (
                ' '.join(cmd), p.returncode, expect_rc, p.stdout, p.stderr))
        return json.loads(p.stdout)

    def run(self):
        e = self.env
        ks = e['OPENSTACK_AUTH_URL']

        # --- Keystone: every auth style in clouds.yaml, and a wrong password
        clouds = {}
        for cloud in (e['OPENSTACK_CLOUD_PASSWORD'], 'ccm-password-ids',
                      e['OPENSTACK_CLOUD_APPCRED'], 'ccm-appcred-name', e['OPENSTACK_CLOUD_ADMIN']):
            conn = openstack.connect(cloud=cloud)
            token = conn.session.get_token()
            check(token, 'no token for cloud %s' % cloud)
            if cloud != e['OPENSTACK_CLOUD_ADMIN']:
                check(conn.current_project_id == e['OPENSTACK_PROJECT_ID'],
                      'cloud %s is scoped to %s, not the member project %s' % (
                          cloud, conn.current_project_id, e['OPENSTACK_PROJECT_ID']))
            clouds[cloud] = conn
            self.ok('token for cloud %s' % cloud)
        body = {'auth': {'identity': {'methods': ['password'], 'password': {'user': {
            'name': e['OPENSTACK_USER'], 'domain': {'name': e['OPENSTACK_DOMAIN']},
            'password': 'not-' + e['OPENSTACK_PASSWORD']}}}}}
        r = requests.post(ks + '/auth/tokens', json=body, timeout=30)
        check(r.status_code == 401, 'wrong password: HTTP %d, expected 401' % r.status_code)
        body['auth']['identity']['password']['user']['password'] = e['OPENSTACK_PASSWORD']
        r = requests.post(ks + '/auth/tokens', json=body, timeout=30)
        check(r.status_code == 201, 'right password: HTTP %d, expected 201' % r.status_code)
        try:
            openstack.connect(cloud='ccm-wrong-password').session.get_token()
            raise Failed('cloud ccm-wrong-password got a token')
        except ka_exceptions.Unauthorized:
            pass  # keystoneauth's 401
        self.ok('wrong password is 401 (HTTP and clouds.yaml), the right one 201')

        # --- catalog as the member sees it (application credential)
        member = clouds[e['OPENSTACK_CLOUD_APPCRED']]
        types = {s['type'] for s in member.session.auth.get_access(member.session).service_catalog.catalog}
        for t in ('identity', 'compute', 'network', 'image'):
            check(t in types, 'catalog lacks %s: %s' % (t, sorted(types)))
        octavia = e.get('OPENSTACK_LOADBALANCER_URL')
        check(('load-balancer' in types) == bool(octavia),
              'catalog %s load-balancer (Octavia started: %s)' % (
                  'has' if 'load-balancer' in types else 'lacks', bool(octavia)))
        self.ok('catalog: %s' % ', '.join(sorted(types)))

        # --- the TLS front: cloud ccm-tls (its CA in cacert) lands on HTTPS everywhere
        tls = openstack.connect(cloud=e['OPENSTACK_CLOUD_TLS'])
        for proxy in (tls.compute, tls.network, tls.image):
            url = proxy.get_endpoint()
            check(url.startswith('https://127.0.0.1:'), 'cloud ccm-tls: endpoint %s' % url)
        check(len(list(tls.compute.flavors())) >= 2, 'cloud ccm-tls: no flavors over HTTPS')
        try:
            requests.get(e['OPENSTACK_TLS_AUTH_URL'], timeout=10)
            raise Failed('the TLS front was trusted without the stack CA')
        except requests.exceptions.SSLError:
            pass
        r = requests.get(e['OPENSTACK_TLS_AUTH_URL'], timeout=10, verify=e['OPENSTACK_CA_FILE'])
        check(r.ok and 'https://' in r.text and 'http://' not in r.text,
              'Keystone over TLS: HTTP %d, links %s' % (r.status_code, r.text[:200]))
        self.ok('TLS front: cloud ccm-tls on HTTPS, the stack CA required, links rewritten')
        if octavia:
            for cloud in (e['OPENSTACK_CLOUD_PASSWORD'], e['OPENSTACK_CLOUD_APPCRED']):
                self.octavia(clouds[cloud], cloud)

        # --- Neutron: external network name → ID (what the generator resolves)
        ext = member.network.find_network(e['OPENSTACK_EXTERNAL_NETWORK'])
        check(ext is not None and ext.id == e['OPENSTACK_EXTERNAL_NETWORK_ID'],
              'external network %s resolves to %s, expected %s' % (
                  e['OPENSTACK_EXTERNAL_NETWORK'], ext and ext.id, e['OPENSTACK_EXTERNAL_NETWORK_ID']))
        check(ext.is_router_external, 'network %s is not external' % ext.name)
        self.ok('external network %s is %s' % (ext.name, ext.id))

        # --- Nova and Neutron through the scene helper
        name = 'smoke-%s' % uuid.uuid4().hex[:8]
        s = self.scene('server-create', '--name', name, '--wait-active')
        sid = s['id']
        try:
            check(s['status'] == 'ACTIVE', 'server status %s' % s['status'])
            check(s['fixed_ips'] and s['fixed_ips'][0].startswith('10.0.0.'),
                  'server fixed IPs %s' % s['fixed_ips'])
            check(list(s['addresses']) == [e['OPENSTACK_INTERNAL_NETWORK']],
                  'server networks %s' % list(s['addresses']))
            check(s['availability_zone'] == e['OPENSTACK_AVAILABILITY_ZONE'],
                  'server AZ %s' % s['availability_zone'])
            check(s['flavor'] == e['OPENSTACK_FLAVOR'], 'server flavor %s' % s['flavor'])
            self.ok('server %s ACTIVE with fixed IP %s in %s' % (
                sid, s['fixed_ips'][0], s['availability_zone']))
            a = self.scene('--cloud', e['OPENSTACK_CLOUD_ADMIN'], 'server-show', sid)
            check(a['compute_host'] == e['OPENSTACK_COMPUTE_HOST'],
                  'server host %s' % a['compute_host'])
            self.ok('admin sees the server on %s' % a['compute_host'])

            port = self.scene('port-create', '--fixed-ip', '10.0.0.250')
            check(port['fixed_ips'][0]['ip_address'] == '10.0.0.250', 'port %s' % port)
            self.scene('port-delete', port['id'])
            self.ok('port with fixed IP 10.0.0.250 created and deleted')

            fip = self.scene('floating-ip-create', '--port', s['ports'][0]['id'],
                             '--wait-server', sid)
            check(fip['fixed_ip_address'] == s['fixed_ips'][0], 'floating IP %s' % fip)
            self.ok('floating IP %s reported by nova' % fip['floating_ip_address'])

            s = self.scene('server-stop', sid, '--wait')
            check(s['status'] == 'SHUTOFF', 'stopped server status %s' % s['status'])
            self.ok('server stopped: SHUTOFF')
            s = self.scene('server-start', sid, '--wait')
            check(s['status'] == 'ACTIVE', 'started server status %s' % s['status'])
            self.ok('server started: ACTIVE')
            self.scene('floating-ip-delete', fip['id'])
        finally:
            deleted = self.scene('server-delete', sid, '--wait')
        check(deleted['deleted'], 'server-delete: %s' % deleted)
        gone = self.scene('server-show', sid, expect_rc=3)
        check(gone['error'] == 'not found', 'deleted server: %s' % gone)
        r = requests.get('%s/servers/%s' % (e['OPENSTACK_COMPUTE_URL'], sid), timeout=30,
                         headers={'X-Auth-Token': member.session.get_token()})
        check(r.status_code == 404, 'GET deleted server: HTTP %d, expected 404' % r.status_code)
        self.ok('server deleted: 404')


    def octavia(self, conn, cloud):
        """A fully-populated load balancer as the member: ACTIVE in time, found by tag and name,
        gone after a cascade delete."""
        e = self.env
        name = 'smoke-lb-%s' % uuid.uuid4().hex[:8]
        member = {'address': '10.0.0.9', 'protocol_port': 30080}
        pool = {'name': name + '-pool', 'protocol': 'TCP', 'lb_algorithm': 'ROUND_ROBIN',
                'members': [member], 'healthmonitor': {'type': 'TCP', 'delay': 5, 'timeout': 3,
                                                       'max_retries': 1}}
        body = {'loadbalancer': {
            'name': name, 'vip_subnet_id': e['OPENSTACK_INTERNAL_SUBNET_ID'], 'tags': [name],
            'listeners': [{'name': name + '-80', 'protocol': 'TCP', 'protocol_port': 80,
                           'default_pool': pool}]}}
        lb_url = e['OPENSTACK_LOADBALANCER_URL'] + '/v2/lbaas'
        headers = {'X-Auth-Token': conn.session.get_token()}
        r = requests.post(lb_url + '/loadbalancers', json=body, headers=headers, timeout=30)
        check(r.status_code == 201, '%s: create: HTTP %d %s' % (cloud, r.status_code, r.text))
        lb_id = r.json()['loadbalancer']['id']
        try:
            t = time.time()
            while True:
                lb = requests.get('%s/loadbalancers/%s' % (lb_url, lb_id), headers=headers,
                                  timeout=30).json()['loadbalancer']
                if lb['provisioning_status'] == 'ACTIVE':
                    break
                check(lb['provisioning_status'] != 'ERROR' and time.time() - t < 60,
                      '%s: load balancer %s' % (cloud, lb['provisioning_status']))
                time.sleep(0.5)
            listeners = requests.get(lb_url + '/listeners', params={'loadbalancer_id': lb_id},
                                     headers=headers, timeout=30).json()['listeners']
            check(len(listeners) == 1 and listeners[0]['provisioning_status'] == 'ACTIVE',
                  '%s: listeners %s' % (cloud, listeners))
            found = requests.get(lb_url + '/loadbalancers', params={'tags': name},
                                 headers=headers, timeout=30).json()['loadbalancers']
            check([x['id'] for x in found] == [lb_id], '%s: by tag: %s' % (cloud, found))
            self.ok('%s: fully-populated load balancer ACTIVE in %.1fs' % (cloud, time.time() - t))
            # The VIP is a real Neutron port of the member's project: a floating IP attaches.
            vip = conn.network.get_port(lb['vip_port_id'])
            check([f['ip_address'] for f in vip.fixed_ips] == [lb['vip_address']],
                  '%s: VIP port %s holds %s, not %s' % (cloud, vip.id, vip.fixed_ips, lb['vip_address']))
            fip = conn.network.create_ip(floating_network_id=e['OPENSTACK_EXTERNAL_NETWORK_ID'],
                                         port_id=vip.id)
            check(fip.fixed_ip_address == lb['vip_address'], '%s: floating IP %s' % (cloud, fip))
            conn.network.delete_ip(fip)
            self.ok('%s: VIP %s is a Neutron port; floating IP %s attached and released' % (
                cloud, lb['vip_address'], fip.floating_ip_address))
            vip_port = vip.id
        finally:
            r = requests.delete('%s/loadbalancers/%s' % (lb_url, lb_id), params={'cascade': 'true'},
                                headers=headers, timeout=30)
            check(r.status_code == 204, '%s: cascade delete: HTTP %d' % (cloud, r.status_code))
        deadline = time.time() + 60
        while requests.get('%s/loadbalancers/%s' % (lb_url, lb_id), headers=headers,
                           timeout=30).status_code != 404:
            check(time.time() < deadline, '%s: load balancer not gone after 60 s' % cloud)
            time.sleep(0.5)
        check(conn.network.find_port(vip_port) is None, '%s: VIP port %s left' % (cloud, vip_port))
        self.ok('%s: cascade delete leaves nothing (the VIP port too)' % cloud)


def tails(directory):
    logs = ('keystone.log', 'rabbitmq.out', 'neutron-server.log', 'placement.log',
            'glance-api.log', 'nova-api.log', 'nova-conductor.log', 'nova-scheduler.log',
            'nova-compute.log', 'octavia-api.out', 'octavia-worker.log')
    for path in (os.path.join(directory, 'log', name) for name in logs):
        if os.path.isfile(path) and os.path.getsize(path):
            with open(path, errors='replace') as f:
                lines = f.readlines()[-20:]
            print('\n----- last %d lines of %s -----' % (len(lines), path), file=sys.stderr)
            sys.stderr.writelines(lines)


def main():
    env_file = envfile.path(sys.argv[1] if len(sys.argv) > 1 else None)
    if not os.path.exists(env_file):
        sys.exit('smoke: %s does not exist: run scripts/openstack-up.sh first' % env_file)
    smoke = Smoke(env_file)
    try:
        smoke.run()
    except Exception as e:  # every failure, including SDK and HTTP errors, fails loudly
        tails(smoke.env.get('OPENSTACK_DIR', os.path.dirname(env_file)))
        print('\nsmoke: FAILED after %d checks: %s: %s' % (
            smoke.checks, type(e).__name__, e), file=sys.stderr)
        print('smoke: %d passed, 1 failed' % smoke.checks, flush=True)
        sys.exit(1)
    print('smoke: OK in %.1fs' % (time.time() - smoke.t0))
    print('smoke: %d passed, 0 failed' % smoke.checks)


if __name__ == '__main__':
    main()
