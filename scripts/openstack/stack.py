#!/usr/bin/python3
"""Bootstrap steps of scripts/openstack-up.sh that talk to the APIs (one Python process each
instead of dozens of `openstack` CLI calls, which take 2-3 s apiece).

  stack.py register --auth-url URL --admin-password PW --service-password PW
                    --tls-auth-url URL [--tls-url TYPE=URL]... TYPE:NAME:URL...
      service project, roles, one service user per service (admin + service roles), catalog
      (RegionOne; RegionNoLB without Octavia; RegionTLS with every URL on its HTTPS front)
  stack.py wait-compute --auth-url URL --admin-password PW --host HOST --discover CMD
      wait until nova-compute on HOST is up, map it to the cell, wait for its hypervisor
  stack.py fixtures --auth-url URL --admin-password PW --host HOST --dir DIR --scene PATH
      member project and user, application credential, availability zone, image, flavors,
      internal and external networks with a router; writes DIR/clouds.yaml and DIR/env
      (--tls-auth-url and --ca-file: the HTTPS front, for the cloud ccm-tls)
"""
import argparse
import os
import shlex
import subprocess
import sys
import time

import openstack
import yaml

import envfile

REGION = 'RegionOne'
# The same endpoints but Octavia's: clouds of this region see a catalog without load-balancer
# (what the generator and the CCM must handle), whether or not the stack runs Octavia.
REGION_NO_LB = 'RegionNoLB'
# Every endpoint on the HTTPS front of scripts/openstack/tls.sh (Octavia's too, when it runs).
REGION_TLS = 'RegionTLS'
DOMAIN = 'Default'
# Test fixtures (names and secrets of a throwaway stack; the tests read them from the env file).
PROJECT = 'ccm'
USER = 'ccm-user'
PASSWORD = 'ccm-member-secret'
APPCRED = 'ccm-appcred'
# A second user of the project with the role Neutron's policy (openstack-up.sh) lets choose a
# floating IP's address: Neutron's default allows it to admins only, so the usual user gets the
# 403 and this one the allocation (spec.loadBalancerIP), both against the real Neutron.
FIP_USER, FIP_PASSWORD, FIP_ROLE = 'ccm-fip-user', 'ccm-fip-secret', 'floating-ip-chooser'
APPCRED_SECRET = 'ccm-appcred-secret'
AZ = 'ccm-az-1'
IMAGE = 'ccm-image'
FLAVOR = 'm1.tiny'
FLAVOR_ALT = 'm1.small'
INTERNAL_NET, INTERNAL_SUBNET, INTERNAL_CIDR = 'ccm-internal', 'ccm-internal-subnet', '10.0.0.0/24'
# Neutron hands out addresses (servers, VIPs) only from these; 10.0.0.50-127 and .250-254 are
# the tests' own fixed IPs (ports created with --fixed-ip), which a concurrent test's server or
# load balancer could otherwise have taken first (a 409 seen in CI).
INTERNAL_POOLS = [{'start': '10.0.0.2', 'end': '10.0.0.49'},
                  {'start': '10.0.0.128', 'end': '10.0.0.249'}]
# TEST-NET-3 (RFC 5737): documentation addresses; there is no dataplane behind any of them.
EXTERNAL_NET, EXTERNAL_SUBNET, EXTERNAL_CIDR = 'ccm-external', 'ccm-external-subnet', '203.0.113.0/24'
ROUTER = 'ccm-router'
CLOUD_PASSWORD, CLOUD_APPCRED = 'ccm-password', 'ccm-appcred'
CLOUD_APPCRED_NO_LB = 'ccm-appcred-no-lb'
CLOUD_TLS = 'ccm-tls'
CLOUD_FIP_CHOOSER = 'ccm-fip-chooser'
SERVICE_USERS = {'compute': 'nova', 'image': 'glance', 'placement': 'placement',
                 'network': 'neutron'}


def say(msg):
    print(msg, flush=True)


def connect(auth_url, username, password, project, **extra):
    return openstack.connect(
        load_yaml_config=False, load_envvars=False, auth_url=auth_url,
        username=username, password=password, project_name=project,
        user_domain_name=DOMAIN, project_domain_name=DOMAIN, region_name=REGION,
        interface='public', identity_api_version='3', **extra)


def admin(args):
    return connect(args.auth_url, 'admin', args.admin_password, 'admin')


def one(items):
    items = list(items)
    return items[0] if items else None


def register(args):
    conn = admin(args)
    idn = conn.identity
    project = one(idn.projects(name='service')) or idn.create_project(
        name='service', domain_id='default')
    roles = [one(idn.roles(name=r)) or idn.create_role(name=r) for r in ('admin', 'service')]
    for region, what in ((REGION_NO_LB, 'the test stack without Octavia'),
                         (REGION_TLS, 'the test stack behind its TLS front')):
        if not one(r for r in idn.regions() if r.id == region):
            idn.create_region(id=region, description=what)
    # The HTTPS URLs come from openstack-up.sh (tls.sh's tls_url): derived in one place.
    tls = dict(spec.split('=', 1) for spec in args.tls_url)
    # Keystone's own endpoint in the other regions too (its bootstrap made only RegionOne's).
    keystone = one(idn.services(type='identity'))
    add_endpoints(idn, keystone, REGION_NO_LB, args.auth_url)
    add_endpoints(idn, keystone, REGION_TLS, args.tls_auth_url)
    for spec in args.services:
        stype, name, url = spec.split(':', 2)
        uname = SERVICE_USERS.get(stype, name)
        user = one(idn.users(name=uname)) or idn.create_user(
            name=uname, password=args.service_password, domain_id='default')
        for role in roles:
            idn.assign_project_role_to_user(project, user, role)
        svc = one(idn.services(type=stype)) or idn.create_service(name=name, type=stype)
        add_endpoints(idn, svc, REGION, url)
        if stype != 'load-balancer':
            add_endpoints(idn, svc, REGION_NO_LB, url)
        if stype not in tls:
            sys.exit('no --tls-url for service type %s' % stype)
        add_endpoints(idn, svc, REGION_TLS, tls[stype])
        say('registered %s (%s) at %s and %s, user %s' % (stype, name, url, tls[stype], uname))


def add_endpoints(idn, service, region, url):
    """The public, internal and admin endpoints of `service` in `region`, where missing."""
    have = {e.interface for e in idn.endpoints(service_id=service.id, region_id=region)}
    for iface in ('public', 'internal', 'admin'):
        if iface not in have:
            idn.create_endpoint(service_id=service.id, interface=iface, url=url, region_id=region)


def wait_compute(args):
    conn = admin(args)
    deadline = time.time() + args.timeout

    def until(what, check):
        while True:
            try:
                found = check()
            except openstack.exceptions.SDKException as e:  # an API still starting
                say('%s: %s' % (what, e))
                found = None
            if found:
                return found
            if time.time() > deadline:
                sys.exit('timed out waiting for %s' % what)
            time.sleep(1)

    until('nova-compute %s up' % args.host, lambda: [
        s for s in conn.compute.services(binary='nova-compute', host=args.host)
        if s.state == 'up' and s.status == 'enabled'])
    say('nova-compute on %s is up' % args.host)
    subprocess.run(shlex.split(args.discover), check=True)
    until('hypervisor %s' % args.host, lambda: [
        h for h in conn.compute.hypervisors() if h.name == args.host])
    say('hypervisor %s is discovered' % args.host)


def fixtures(args):
    conn = admin(args)
    idn = conn.identity
    env = {}

    project = one(idn.projects(name=PROJECT)) or idn.create_project(
        name=PROJECT, domain_id='default', description='ccm-assets tests')
    user = one(idn.users(name=USER)) or idn.create_user(
        name=USER, password=PASSWORD, domain_id='default', default_project_id=project.id)
    for rname in ('member', 'reader'):
        idn.assign_project_role_to_user(project, user, one(idn.roles(name=rname)))
    say('project %s, user %s' % (project.id, user.id))
    chooser = one(idn.users(name=FIP_USER)) or idn.create_user(
        name=FIP_USER, password=FIP_PASSWORD, domain_id='default', default_project_id=project.id)
    one(idn.roles(name=FIP_ROLE)) or idn.create_role(name=FIP_ROLE)
    for rname in ('member', 'reader', FIP_ROLE):
        idn.assign_project_role_to_user(project, chooser, one(idn.roles(name=rname)))
    # Room for every test's servers at once (the fake driver makes no real ones): Nova's
    # defaults (10 instances, 20 cores) were met when the route test's 20 servers ran beside
    # the others.
    conn.set_compute_quotas(project.id, instances=200, cores=200, ram=200 * 128)

    member = connect(args.auth_url, USER, PASSWORD, PROJECT)
    appcred = member.identity.create_application_credential(
        user=user.id, name=APPCRED, secret=APPCRED_SECRET,
        description='ccm-assets tests')
    say('application credential %s' % appcred.id)

    # The compute host in an availability zone of its own, so servers report a real, non-default AZ.
    agg = conn.compute.create_aggregate(name=AZ, availability_zone=AZ)
    conn.compute.add_host_to_aggregate(agg, args.host)

    image = create_image(conn, args.dir)
    flavors = {n: conn.compute.create_flavor(name=n, ram=ram, vcpus=1, disk=1)
               for n, ram in ((FLAVOR, 64), (FLAVOR_ALT, 128))}

    net = conn.network
    ext = net.create_network(name=EXTERNAL_NET, is_router_external=True,
                             provider_network_type='flat',
                             provider_physical_network='external')
    ext_subnet = net.create_subnet(network_id=ext.id, name=EXTERNAL_SUBNET, ip_version=4,
                                   cidr=EXTERNAL_CIDR, is_dhcp_enabled=False)
    internal = net.create_network(name=INTERNAL_NET, project_id=project.id)
    int_subnet = net.create_subnet(network_id=internal.id, name=INTERNAL_SUBNET, ip_version=4,
                                   cidr=INTERNAL_CIDR, project_id=project.id,
                                   allocation_pools=INTERNAL_POOLS)
    router = net.create_router(name=ROUTER, project_id=project.id,
                               external_gateway_info={'network_id': ext.id})
    net.add_interface_to_router(router, subnet_id=int_subnet.id)
    say('networks %s (internal), %s (external), router %s' % (internal.id, ext.id, router.id))

    clouds_yaml = os.path.join(args.dir, 'clouds.yaml')
    write_clouds_yaml(clouds_yaml, args, project, appcred)
    ks = args.auth_url
    env.update({
        'OPENSTACK_DIR': args.dir,
        'OPENSTACK_CLOUDS_YAML': clouds_yaml,
        'OS_CLIENT_CONFIG_FILE': clouds_yaml,
        'OPENSTACK_CLOUD_PASSWORD': CLOUD_PASSWORD,
        'OPENSTACK_CLOUD_APPCRED': CLOUD_APPCRED,
        'OPENSTACK_CLOUD_APPCRED_NO_LB': CLOUD_APPCRED_NO_LB,
        'OPENSTACK_REGION_NO_LB': REGION_NO_LB,
        'OPENSTACK_CLOUD_ADMIN': 'admin',
        'OPENSTACK_AUTH_URL': ks,
        'OPENSTACK_REGION': REGION,
        'OPENSTACK_DOMAIN': DOMAIN,
        'OPENSTACK_PROJECT': PROJECT,
        'OPENSTACK_PROJECT_ID': project.id,
        'OPENSTACK_USER': USER,
        'OPENSTACK_USER_ID': user.id,
        'OPENSTACK_PASSWORD': PASSWORD,
        'OPENSTACK_APPCRED_NAME': APPCRED,
        'OPENSTACK_APPCRED_ID': appcred.id,
        'OPENSTACK_APPCRED_SECRET': APPCRED_SECRET,
        'OPENSTACK_ADMIN_USER': 'admin',
        'OPENSTACK_ADMIN_PROJECT': 'admin',
        'OPENSTACK_ADMIN_PASSWORD': args.admin_password,
        'OPENSTACK_INTERNAL_NETWORK': INTERNAL_NET,
        'OPENSTACK_INTERNAL_NETWORK_ID': internal.id,
        'OPENSTACK_INTERNAL_SUBNET_ID': int_subnet.id,
        'OPENSTACK_INTERNAL_CIDR': INTERNAL_CIDR,
        'OPENSTACK_EXTERNAL_NETWORK': EXTERNAL_NET,
        'OPENSTACK_EXTERNAL_NETWORK_ID': ext.id,
        'OPENSTACK_EXTERNAL_SUBNET_ID': ext_subnet.id,
        'OPENSTACK_EXTERNAL_CIDR': EXTERNAL_CIDR,
        'OPENSTACK_ROUTER_ID': router.id,
        'OPENSTACK_FLAVOR': FLAVOR,
        'OPENSTACK_FLAVOR_ID': flavors[FLAVOR].id,
        'OPENSTACK_FLAVOR_ALT': FLAVOR_ALT,
        'OPENSTACK_IMAGE': IMAGE,
        'OPENSTACK_IMAGE_ID': image,
        'OPENSTACK_COMPUTE_HOST': args.host,
        'OPENSTACK_AVAILABILITY_ZONE': AZ,
        'OPENSTACK_COMPUTE_URL': conn.compute.get_endpoint(),
        'OPENSTACK_NETWORK_URL': conn.network.get_endpoint(),
        'OPENSTACK_IMAGE_URL': conn.image.get_endpoint(),
        'OPENSTACK_SCENE': args.scene,
        'OPENSTACK_TLS_AUTH_URL': args.tls_auth_url,
        'OPENSTACK_TLS_REGION': REGION_TLS,
        'OPENSTACK_CA_FILE': args.ca_file,
        'OPENSTACK_CLOUD_TLS': CLOUD_TLS,
        'OPENSTACK_CLOUD_FIP_CHOOSER': CLOUD_FIP_CHOOSER,
    })
    envfile.write(os.path.join(args.dir, 'env'), env)
    say('wrote %s and %s/env' % (clouds_yaml, args.dir))


def create_image(conn, directory):
    """A 1 MiB raw image, uploaded for real to Glance's file store (nova validates the image)."""
    image = conn.image.post('/images', json={
        'name': IMAGE, 'disk_format': 'raw', 'container_format': 'bare',
        'visibility': 'public', 'min_disk': 0, 'min_ram': 0}).json()
    data = b'\0' * (1 << 20)
    resp = conn.image.put('/images/%s/file' % image['id'], data=data,
                          headers={'Content-Type': 'application/octet-stream'})
    if resp.status_code != 204:
        sys.exit('image upload: %s %s' % (resp.status_code, resp.text))
    for _ in range(60):
        status = conn.image.get('/images/%s' % image['id']).json()['status']
        if status == 'active':
            return image['id']
        time.sleep(0.5)
    sys.exit('image %s did not become active (status %s)' % (image['id'], status))


def write_clouds_yaml(path, args, project, appcred):
    auth_url, admin_password = args.auth_url, args.admin_password
    common = {'region_name': REGION, 'interface': 'public', 'identity_api_version': 3}
    password_auth = {'auth_url': auth_url, 'username': USER, 'password': PASSWORD,
                     'project_name': PROJECT, 'user_domain_name': DOMAIN,
                     'project_domain_name': DOMAIN}
    clouds = {
        # password, by names
        CLOUD_PASSWORD: dict(common, auth_type='password', auth=password_auth),
        # password, by IDs (project_id, user_domain_id)
        'ccm-password-ids': dict(common, auth_type='password', auth={
            'auth_url': auth_url, 'username': USER, 'password': PASSWORD,
            'project_id': project.id, 'user_domain_id': 'default'}),
        # application credential, by ID (the style the installer prefers)
        CLOUD_APPCRED: dict(common, auth_type='v3applicationcredential', auth={
            'auth_url': auth_url, 'application_credential_id': appcred.id,
            'application_credential_secret': APPCRED_SECRET}),
        # application credential, by name + user
        'ccm-appcred-name': dict(common, auth_type='v3applicationcredential', auth={
            'auth_url': auth_url, 'application_credential_name': APPCRED,
            'application_credential_secret': APPCRED_SECRET, 'username': USER,
            'user_domain_name': DOMAIN}),
        # the member user with a wrong password: authentication fails with 401
        'ccm-wrong-password': dict(common, auth_type='password',
                                   auth=dict(password_auth, password='not-the-password')),
        # the application credential in the region whose catalog has no load-balancer
        CLOUD_APPCRED_NO_LB: dict(common, region_name=REGION_NO_LB,
                                  auth_type='v3applicationcredential', auth={
                                      'auth_url': auth_url, 'application_credential_id': appcred.id,
                                      'application_credential_secret': APPCRED_SECRET}),
        # the password cloud through the HTTPS front: every catalog lookup lands on TLS
        CLOUD_TLS: dict(common, region_name=REGION_TLS, cacert=args.ca_file, auth_type='password',
                        auth=dict(password_auth, auth_url=args.tls_auth_url)),
        # a user of the project whose role lets it choose a floating IP's address
        CLOUD_FIP_CHOOSER: dict(common, auth_type='password', auth=dict(
            password_auth, username=FIP_USER, password=FIP_PASSWORD)),
        'admin': dict(common, auth_type='password', auth={
            'auth_url': auth_url, 'username': 'admin', 'password': admin_password,
            'project_name': 'admin', 'user_domain_name': DOMAIN,
            'project_domain_name': DOMAIN}),
    }
    tmp = path + '.tmp'
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 'w') as f:
        f.write('# written by scripts/openstack-up.sh: the test stack on 127.0.0.1\n')
        yaml.safe_dump({'clouds': clouds}, f, default_flow_style=False, sort_keys=False)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    for name in ('register', 'wait-compute', 'fixtures'):
        s = sub.add_parser(name)
        s.add_argument('--auth-url', required=True)
        s.add_argument('--admin-password', required=True)
        if name == 'register':
            s.add_argument('--service-password', required=True)
            s.add_argument('--tls-auth-url', required=True, help="Keystone's HTTPS front")
            s.add_argument('--tls-url', action='append', default=[], metavar='TYPE=URL',
                           help="a service's HTTPS front (one per service)")
            s.add_argument('services', nargs='+', metavar='TYPE:NAME:URL')
        else:
            s.add_argument('--host', required=True)
        if name == 'wait-compute':
            s.add_argument('--discover', required=True, help='command that maps hosts to cells')
            s.add_argument('--timeout', type=float, default=300)
        if name == 'fixtures':
            s.add_argument('--dir', required=True)
            s.add_argument('--scene', required=True)
            s.add_argument('--tls-auth-url', required=True)
            s.add_argument('--ca-file', required=True)
    args = p.parse_args()
    {'register': register, 'wait-compute': wait_compute, 'fixtures': fixtures}[args.cmd](args)


if __name__ == '__main__':
    main()
