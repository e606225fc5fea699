#!/usr/bin/python3
"""octavia-worker (Debian's 11.0.0, Zed) for the test stack: the same command line, with
SQLite locking (octavia_sqlite) and two fixes fully-populated creates need in this version
when the jobboard is off:

1. ControllerWorker.run_flow hands only the positional arguments to the flow builder, so a
   load balancer created with its listeners goes ACTIVE while the listeners, pools, members
   and monitors stay PENDING_CREATE for ever. Pass the keyword arguments too (store apart).
2. The full-graph listeners subflow runs AmphoraePostNetworkPlug, which requires
   amphorae_network_config that nothing in that subflow provides (MissingDependencies): add
   the task the member flows use to provide it, right before.

And one change for the test stack: the real network driver (allowed_address_pairs), so that
VIP ports are real Neutron ports (floating IPs and user-given ports work), with its amphora
plumbing (ports on the amphora's compute instance, which the no-op compute driver never made)
done by the no-op driver instead.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import octavia_sqlite  # noqa: E402,F401

from oslo_config import cfg  # noqa: E402
from oslo_log import log as logging  # noqa: E402
from taskflow.listeners import logging as taskflow_logging  # noqa: E402

from octavia.cmd import octavia_worker  # noqa: E402
from octavia.common import constants  # noqa: E402
from octavia.controller.worker.v2 import controller_worker  # noqa: E402
from octavia.controller.worker.v2.flows import load_balancer_flows  # noqa: E402
from octavia.controller.worker.v2.tasks import amphora_driver_tasks, network_tasks  # noqa: E402
from octavia.network.drivers.neutron import allowed_address_pairs  # noqa: E402
from octavia.network.drivers.noop_driver import driver as noop_network  # noqa: E402

LOG = logging.getLogger('octavia.controller.worker.v2.controller_worker')


def run_flow(self, func, *args, **kwargs):
    if cfg.CONF.task_flow.jobboard_enabled:
        self.services_controller.run_poster(func, *args, **kwargs)
        return
    store = kwargs.pop('store', None)
    engine = self.tf_engine.taskflow_load(func(*args, **kwargs), store=store)
    with taskflow_logging.DynamicLoggingListener(engine, log=LOG):
        engine.run()


original_listeners_flow = load_balancer_flows.LoadBalancerFlows._create_listeners_flow


def create_listeners_flow(self):
    tasks = []
    for task in original_listeners_flow(self):
        if isinstance(task, amphora_driver_tasks.AmphoraePostNetworkPlug):
            tasks.append(network_tasks.GetAmphoraeNetworkConfigs(
                name='ccm-get-amphorae-network-configs',
                requires=constants.LOADBALANCER_ID,
                provides=constants.AMPHORAE_NETWORK_CONFIG))
        tasks.append(task)
    return tasks


controller_worker.ControllerWorker.run_flow = run_flow
load_balancer_flows.LoadBalancerFlows._create_listeners_flow = create_listeners_flow

# The amphora side of the real network driver, done by the no-op one (see the docstring).
AMPHORA_PLUMBING = ('plug_aap_port', 'unplug_aap_port', 'plug_network', 'unplug_network',
                    'get_plugged_networks', 'plug_port', 'failover_preparation',
                    'get_network_configs', 'wait_for_port_detach')
NOOP_NETWORK = noop_network.NoopManager()


def _noop(name):
    def method(self, *args, **kwargs):
        return getattr(NOOP_NETWORK, name)(*args, **kwargs)
    method.__name__ = name
    return method


for _name in AMPHORA_PLUMBING:
    setattr(allowed_address_pairs.AllowedAddressPairsDriver, _name, _noop(_name))


def no_network_deltas(self, *args, **kwargs):
    """The network deltas plug networks into the amphora's compute instance: there is none."""
    return {}


network_tasks.HandleNetworkDeltas.execute = no_network_deltas
network_tasks.HandleNetworkDelta.execute = no_network_deltas

if __name__ == '__main__':
    sys.argv[0] = 'octavia-worker'
    sys.exit(octavia_worker.main())
