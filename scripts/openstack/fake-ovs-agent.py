#!/usr/bin/python3
"""Register a fake Open vSwitch agent for HOST with a running neutron-server.

It reports state once over the real agent RPC (topic q-reports-plugin), so ML2's real
`openvswitch` mechanism driver binds ports on HOST (nova-compute's [DEFAULT] host) and nova can
boot servers. Nothing touches Open vSwitch: there is no dataplane. neutron.conf sets a large
agent_down_time, so one report keeps the agent alive. Needs Debian's python3-neutron.

usage: fake-ovs-agent.py NEUTRON_CONF HOST
"""
import sys

from neutron_lib import constants
from neutron_lib import context
from neutron_lib import rpc as n_rpc
from neutron_lib.agent import topics
from oslo_config import cfg

from neutron.agent import rpc as agent_rpc
from neutron.common import config as common_config
from neutron.conf.agent import common as agent_conf


def main():
    conf_file, host = sys.argv[1], sys.argv[2]
    common_config.register_common_config_options()
    agent_conf.register_agent_state_opts_helper(cfg.CONF)
    cfg.CONF(['--config-file', conf_file], project='neutron')
    n_rpc.init(cfg.CONF)
    state = {
        'binary': 'neutron-openvswitch-agent',
        'host': host,
        'topic': constants.L2_AGENT_TOPIC,
        'agent_type': constants.AGENT_TYPE_OVS,
        'start_flag': True,
        'configurations': {
            # physical network "external" (the flat external network) on bridge br-ex
            'bridge_mappings': {'external': 'br-ex'},
            'tunnel_types': ['vxlan'],
            'tunneling_ip': '127.0.0.1',
            'l2_population': False,
            'arp_responder_enabled': False,
            'enable_distributed_routing': False,
            'integration_bridge': 'br-int',
            'datapath_type': 'system',
            'ovs_hybrid_plug': False,
            'ovs_capabilities': {'datapath_types': ['system'],
                                 'iface_types': ['internal', 'vxlan']},
        },
    }
    api = agent_rpc.PluginReportStateAPI(topics.REPORTS)
    api.report_state(context.get_admin_context_without_session(), state, use_call=True)
    print('reported the state of a fake OVS agent on %s' % host, flush=True)


if __name__ == '__main__':
    main()
